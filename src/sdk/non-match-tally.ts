/**
 * The non-matches of in-process checks, rolled up before they are sent, as the server rolls
 * up the non-matches it records (docs/observability.md, "Non-matches are rolled up"): one
 * event per minute, agent, stage, step, session and control, with `count` and their total
 * `execution_duration_ms`, sent with the batcher's next flush. Matches, errors and
 * non-matches whose selector found nothing are sent one event each (eventJsonOf).
 * A check of 20 controls that all pass sent 20 events, each parsed, validated and rolled up
 * by the server; a busy MCP gateway sent a thousand every 50 calls. The server keeps no more
 * of them than the count either way.
 * 0.49-0.53 of the stdio MCP gateway's CPU per tools/call (263-308 against 533-613 µs) and 0.07-0.11 of the guard server's (18-23 against 210-280 µs); 20 sdk controls, 4,000 calls, CPU times from /proc, two runs each.
 */
import type { ControlExecution } from '../engine/api.js';
import { MAX_EVENT_COUNT, type Stage, type StepType } from '../model/index.js';
import { eventJsonOf } from './events.js';
import { freshTraceIds } from './tracing.js';

const MINUTE_MS = 60_000;
/** Distinct rollups held between flushes; past this, a non-match of a new key is sent as an event of its own. */
export const MAX_TALLY_KEYS = 1000;

/** What the events of one check share. */
export interface TalliedCheck {
  agentName: string;
  stage: Stage;
  stepType: StepType;
  stepName: string;
  sessionId: string | null;
  setRevision: number | null;
}

/** The rollups of one minute and check (agent, stage, step, session, revision), by control id. */
interface Group extends TalliedCheck {
  minute: number;
  entries: Map<number, Entry[]>;
}

interface Entry {
  /** The first execution: the control as it ran (name, action, evaluator, selector, mode). */
  execution: ControlExecution;
  count: number;
  durationMs: number;
  /** The latest check's time: the rollup's timestamp. */
  lastMs: number;
}

export class NonMatchTally {
  readonly #groups = new Map<string, Group>();
  /**
   * The latest group of each stage: a tool call's pre and post checks take turns, each finds its own without a key.
   * Groups so found, not a key per non-match: 1-3 against 16-21 µs per tools/call of 20 sdk controls (add alone, 5 rounds of 100,000), about 0.06 of the MCP gateway's CPU per call.
   */
  readonly #latest: Record<Stage, Group | null> = { pre: null, post: null };
  #size = 0;
  /**
   * Rollups at MAX_EVENT_COUNT, which the server takes no more of in one event: their key
   * starts a new rollup. A batch job checking rows in memory never yields to the flush
   * timer, and its rollup of a million and more non-matches was refused (422) with its
   * whole batch, then retried, and refused, for ever.
   */
  #full: Array<{ group: Group; entry: Entry }> = [];

  get size(): number {
    return this.#size + this.#full.length;
  }

  /** Counts the check's plain non-matches (no error, selector found) and returns the executions sent one event each. */
  add(executions: readonly ControlExecution[], check: TalliedCheck, nowMs: number): readonly ControlExecution[] {
    let group: Group | null = null;
    let rest: ControlExecution[] | null = null;
    for (let i = 0; i < executions.length; i++) {
      const e = executions[i]!;
      if (!rolledUp(e) || !this.#count((group ??= this.#groupOf(check, Math.floor(nowMs / MINUTE_MS))), e, nowMs)) (rest ??= []).push(e);
    }
    return rest ?? NONE;
  }

  /** Every rollup as the JSON text of its event, and the tally emptied. */
  drain(): string[] {
    const out = this.#full.map(({ group, entry }) => eventTextOf(group, entry));
    for (const group of this.#groups.values()) {
      for (const list of group.entries.values()) for (const entry of list) out.push(eventTextOf(group, entry));
    }
    this.#groups.clear();
    this.#full = [];
    this.#latest.pre = this.#latest.post = null;
    this.#size = 0;
    return out;
  }

  #groupOf(check: TalliedCheck, minute: number): Group {
    const latest = this.#latest[check.stage];
    if (
      latest !== null && latest.minute === minute && latest.agentName === check.agentName && latest.stepType === check.stepType &&
      latest.stepName === check.stepName && latest.sessionId === check.sessionId && latest.setRevision === check.setRevision
    ) {
      return latest;
    }
    const key = JSON.stringify([minute, check.agentName, check.stage, check.stepType, check.stepName, check.sessionId, check.setRevision]);
    let group = this.#groups.get(key);
    if (group === undefined) this.#groups.set(key, (group = { ...check, minute, entries: new Map() }));
    return (this.#latest[check.stage] = group);
  }

  /** Adds `e` to its rollup; false when it has none and the tally is full. */
  #count(group: Group, e: ControlExecution, nowMs: number): boolean {
    const duration = Math.max(0, e.duration_ms);
    let list = group.entries.get(e.control_id);
    if (list !== undefined) {
      for (let i = 0; i < list.length; i++) {
        const entry = list[i]!;
        const x = entry.execution;
        if (x.control_name === e.control_name && x.action === e.action && x.evaluator_name === e.evaluator_name && x.selector_path === e.selector_path && x.mode === e.mode) {
          entry.count++;
          entry.durationMs += duration;
          entry.lastMs = nowMs;
          if (entry.count === MAX_EVENT_COUNT) {
            list.splice(i, 1);
            this.#size--;
            this.#full.push({ group, entry });
          }
          return true;
        }
      }
    }
    if (this.#size >= MAX_TALLY_KEYS) return false;
    if (list === undefined) group.entries.set(e.control_id, (list = []));
    list.push({ execution: e, count: 1, durationMs: duration, lastMs: nowMs });
    this.#size++;
    return true;
  }
}

const NONE: readonly ControlExecution[] = Object.freeze([]);

/** A rollup's event; it stands for many checks, so for no one check's trace: it has ids of its own. */
function eventTextOf(group: Group, { execution, count, durationMs, lastMs }: Entry): string {
  const ctx = {
    agentName: group.agentName, step: { type: group.stepType, name: group.stepName }, stage: group.stage, ...freshTraceIds(),
    timestamp: new Date(lastMs).toISOString(), setRevision: group.setRevision, sessionId: group.sessionId,
  };
  return eventJsonOf([{ ...execution, duration_ms: durationMs }], ctx, count)[0]!;
}

/** A non-match the server would roll up (its isNonMatch): not matched, no error, the selector found something. */
function rolledUp(e: ControlExecution): boolean {
  return !e.matched && e.error_message == null && e.selector_missing !== true;
}
