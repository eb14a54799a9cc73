/**
 * Session steps of one replica, begun in batches (docs/sessions.md). A step costs one
 * round trip to the database; under load, a statement per step costs more than the rest
 * of the evaluation (the database's work per statement, the client's per query). So
 * steps that arrive while MAX_IN_FLIGHT statements are under way wait and go together in
 * the next one (at most MAX_BATCH): an idle replica begins a step at once, a busy one
 * pays one statement for many steps.
 *
 * Exact as one statement per step: each session's row is counted and read under its
 * row lock in the statement, after every label committed before it. Steps of one session
 * in one batch are steps in flight together: they count as many steps and read the same
 * labels, as they would one after the other with neither having added labels yet (labels
 * are added after the evaluation, ADD_LABELS in sessions.ts). Rows are locked in key
 * order, so two batches (of this replica or another) cannot deadlock.
 *
 * The batch commits without waiting for the WAL flush (synchronous_commit off, for its
 * transaction only): a step count or last-seen time is not worth a disk flush per
 * statement. Labels are committed synchronously, and the WAL is flushed in order, so a
 * label that survives a crash of the database server has its session row with it; what a
 * crash can lose is the counts and last-seen times of the last moments (docs/sessions.md).
 */
import type { SharedSessionStep } from '../types.js';
import type { PostgresDatabase } from './database.js';

/** Most distinct sessions begun by one statement. */
export const MAX_BATCH = 256;

/**
 * Statements under way at once. One at a time leaves the replica waiting on each round
 * trip (a loaded database host answers in milliseconds); a few overlap them, and steps
 * still gather into batches while all are busy.
 */
const MAX_IN_FLIGHT = 1;

/** One call of session_begin_steps (session-begin-steps.ts) begins a batch; `since` as numeric (sessions.ts ADD_LABELS). */
const BEGIN_STEPS = `SELECT began_agent AS agent_name, began_session AS session_id, began_epoch AS epoch, began_since::numeric AS since, began_labels AS labels
  FROM session_begin_steps($1, $2, $3, $4, $5, $6)`;

/** A step waiting for its session to be begun. */
interface Waiting {
  readonly agentName: string;
  readonly sessionId: string;
  readonly now: number;
  readonly expiredBefore: number;
  readonly max: number;
  readonly resolve: (step: SharedSessionStep | null) => void;
  readonly reject: (error: unknown) => void;
}

/** A session's steps in one batch. */
interface Group {
  readonly agentName: string;
  readonly sessionId: string;
  readonly steps: Waiting[];
}

interface BeganRow {
  agent_name: string;
  session_id: string;
  epoch: number;
  /** numeric, as text. */
  since: string;
  labels: string[];
}

/** Begins one step alone, when a batch could not make room for its new session. */
export type BeginOne = (agentName: string, sessionId: string, now: number, expiredBefore: number, max: number) => Promise<SharedSessionStep | null>;

export class SessionStepBatcher {
  #queue: Waiting[] = [];
  #inFlight = 0;

  constructor(
    private readonly database: PostgresDatabase,
    private readonly beginOne: BeginOne,
  ) {}

  begin(agentName: string, sessionId: string, now: number, expiredBefore: number, max: number): Promise<SharedSessionStep | null> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ agentName, sessionId, now, expiredBefore, max, resolve, reject });
      if (this.#inFlight < MAX_IN_FLIGHT) void this.#run();
    });
  }

  /** Begins what waits, a batch at a time, until nothing is left. */
  async #run(): Promise<void> {
    this.#inFlight++;
    try {
      while (this.#queue.length > 0) {
        const groups = groupsOf(this.#queue.splice(0, MAX_BATCH));
        try {
          await this.#beginGroups(groups);
        } catch (error) {
          for (const group of groups) for (const step of group.steps) step.reject(error);
        }
      }
    } finally {
      this.#inFlight--;
    }
  }

  async #beginGroups(groups: Group[]): Promise<void> {
    // A batch is begun at the time of its latest step (all of them are in flight now).
    let now = 0;
    let expiredBefore = 0;
    let max = Number.MAX_SAFE_INTEGER;
    for (const group of groups) {
      for (const step of group.steps) {
        now = Math.max(now, step.now);
        expiredBefore = Math.max(expiredBefore, step.expiredBefore);
        max = Math.min(max, step.max);
      }
    }
    const rows = await this.database.prepared<BeganRow>('guard_session_begin_steps', BEGIN_STEPS, [
      groups.map((g) => g.agentName),
      groups.map((g) => g.sessionId),
      groups.map((g) => g.steps.length),
      now,
      expiredBefore,
      max,
    ]);
    const began = new Map<string, BeganRow>();
    for (const row of rows) began.set(keyOf(row.agent_name, row.session_id), row);
    const alone: Promise<void>[] = [];
    for (const group of groups) {
      const row = began.get(keyOf(group.agentName, group.sessionId));
      if (row !== undefined) {
        const begun = { epoch: row.epoch, since: Number(row.since), labels: new Set(row.labels) };
        for (const step of group.steps) step.resolve(begun);
        continue;
      }
      // A new session the batch had no room for: one step at a time, as many as fit. Its
      // first step alone creates it, then the others count on it: begun all at once, they
      // would race to create it, each giving its slot back in turn.
      const [head, ...rest] = group.steps.map((step) => () => this.beginOne(step.agentName, step.sessionId, step.now, step.expiredBefore, step.max).then(step.resolve, step.reject));
      alone.push(head!().then(() => Promise.all(rest.map((begin) => begin())).then(() => undefined)));
    }
    await Promise.all(alone);
  }
}

/** The waiting steps by session (BEGIN_STEPS locks their rows in key order). */
function groupsOf(steps: readonly Waiting[]): Group[] {
  const groups = new Map<string, Group>();
  for (const step of steps) {
    const key = keyOf(step.agentName, step.sessionId);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { agentName: step.agentName, sessionId: step.sessionId, steps: [step] });
    else group.steps.push(step);
  }
  return [...groups.values()];
}

function keyOf(agentName: string, sessionId: string): string {
  return `${agentName}\u0000${sessionId}`;
}
