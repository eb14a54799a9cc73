import type { ControlMode } from '../model/index.js';
import { isoOfEpochMs } from '../model/iso-time.js';
import type { EventRollup } from '../store/types.js';

const MINUTE_MS = 60_000;

/** What identifies a rollup besides its minute: the stored rollup's key fields. */
export type RollupKey = Omit<EventRollup, 'bucket' | 'count' | 'total_duration_ms'>;

export interface NonMatchRollupsOptions {
  /** Distinct (minute, key) entries held at most; non-matches past it are dropped. */
  maxKeys: number;
  /** Rollups to store; a failure drops them unless `retryable` accepts it. */
  write(rollups: EventRollup[]): Promise<void>;
  /** `count` non-matches reached the store (summed over the rollups written). */
  onWritten?(count: number): void;
  onDropped?(count: number, reason: 'buffer_full' | 'write_failed'): void;
  onWriteError?(error: unknown, count: number): void;
  /** A failed write this answers true for (database unreachable) is merged back for the next flush. */
  retryable?(error: unknown): boolean;
  onWriteDeferred?(error: unknown, count: number): void;
}

interface Entry extends RollupKey {
  bucket_ms: number;
  count: number;
  total_duration_ms: number;
}

/** The part of a key shared by all executions of one evaluation. */
export interface RollupGroup {
  agent_name: string;
  check_stage: string;
  applies_to: string;
}

/** The per-control part of a key, with the time the control took. */
export interface RolledExecution {
  control_id: number;
  control_name: string;
  evaluator_name: string | null;
  duration_ms: number;
  /** Absent means `enforce`. */
  mode?: ControlMode | undefined;
}

/** The entries of one (minute, agent, stage, step type), by control id (usually one entry each). */
export interface Group extends RollupGroup {
  readonly bucket_ms: number;
  readonly entries: Map<number, Entry[]>;
}

/** Groups by minute, by step type, by stage (and, in NonMatchRollups.groups, by agent). */
type ByMinute = Map<number, Group>;
type ByType = Map<string, ByMinute>;
type ByStage = Map<string, ByType>;

/**
 * Non-matches counted in memory per minute and key until the next flush writes them as
 * rollup rows. Storing each non-match as an indexed row cost ~9 µs of CPU; adding to a
 * map entry costs a fraction of that. Memory is bounded by `maxKeys` entries, however
 * many non-matches arrive.
 */
export class NonMatchRollups {
  // Two levels so that recording an evaluation looks up one group, not one per control.
  // Groups are found by agent, stage, step type and minute, through maps keyed by the names
  // themselves (no key is joined per evaluation); `all` lists them for the flush.
  private groups = new Map<string, ByStage>();
  private all: Group[] = [];
  // Consecutive evaluations are mostly of the same agent, stage and step type in the same
  // minute: the last group answers them without a map lookup.
  private last: Group | null = null;
  private count = 0;
  private running: Promise<void> | null = null;
  private readonly maxKeys: number;

  constructor(private readonly opts: NonMatchRollupsOptions) {
    this.maxKeys = Math.max(1, Math.floor(opts.maxKeys));
  }

  /** Distinct entries waiting. */
  get size(): number {
    return this.count;
  }

  /** The group of one minute, agent, stage and step type; look it up once per evaluation. */
  group(timeMs: number, agent_name: string, check_stage: string, applies_to: string): Group {
    const bucket_ms = Math.floor(timeMs / MINUTE_MS) * MINUTE_MS;
    const last = this.last;
    if (
      last !== null &&
      last.bucket_ms === bucket_ms &&
      last.agent_name === agent_name &&
      last.check_stage === check_stage &&
      last.applies_to === applies_to
    ) {
      return last;
    }
    let byStage = this.groups.get(agent_name);
    if (!byStage) this.groups.set(agent_name, (byStage = new Map<string, ByType>()));
    let byType = byStage.get(check_stage);
    if (!byType) byStage.set(check_stage, (byType = new Map<string, ByMinute>()));
    let byMinute = byType.get(applies_to);
    if (!byMinute) byType.set(applies_to, (byMinute = new Map<number, Group>()));
    let group = byMinute.get(bucket_ms);
    if (!group) {
      group = { bucket_ms, agent_name, check_stage, applies_to, entries: new Map() };
      byMinute.set(bucket_ms, group);
      this.all.push(group);
    }
    this.last = group;
    return group;
  }

  /** Counts one non-match (or `count` of them) into a group; false when it was dropped at the cap. */
  addExecution(group: Group, x: RolledExecution, count = 1): boolean {
    let list = group.entries.get(x.control_id);
    const evaluator = x.evaluator_name || null;
    const mode = x.mode ?? 'enforce';
    if (list) {
      for (const entry of list) {
        if (entry.control_name === x.control_name && entry.evaluator_name === evaluator && entry.mode === mode) {
          entry.count += count;
          entry.total_duration_ms += x.duration_ms;
          return true;
        }
      }
    }
    if (this.count >= this.maxKeys) {
      this.opts.onDropped?.(count, 'buffer_full');
      return false;
    }
    if (!list) {
      list = [];
      group.entries.set(x.control_id, list);
    }
    list.push({
      bucket_ms: group.bucket_ms,
      agent_name: group.agent_name,
      control_id: x.control_id,
      control_name: x.control_name,
      check_stage: group.check_stage,
      applies_to: group.applies_to,
      evaluator_name: evaluator,
      mode,
      count,
      total_duration_ms: x.duration_ms,
    });
    this.count++;
    return true;
  }

  /** Counts one non-match (or `count` of them); false when it was dropped at the cap. */
  add(timeMs: number, key: RollupKey, durationMs: number, count = 1): boolean {
    const x = { control_id: key.control_id, control_name: key.control_name, evaluator_name: key.evaluator_name, duration_ms: durationMs, mode: key.mode };
    return this.addExecution(this.group(timeMs, key.agent_name, key.check_stage, key.applies_to), x, count);
  }

  /** Writes every entry now; one flush runs at a time (a second call waits for it, then runs). */
  async flush(): Promise<void> {
    while (this.running) await this.running;
    if (this.count === 0) return;
    this.running = this.drain().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async drain(): Promise<void> {
    const taken: Entry[] = [];
    for (const group of this.all) for (const list of group.entries.values()) taken.push(...list);
    this.groups = new Map();
    this.all = [];
    this.last = null;
    this.count = 0;
    const rollups: EventRollup[] = [];
    let count = 0;
    for (const e of taken) {
      count += e.count;
      rollups.push({
        bucket: isoOfEpochMs(e.bucket_ms),
        agent_name: e.agent_name,
        control_id: e.control_id,
        control_name: e.control_name,
        check_stage: e.check_stage,
        applies_to: e.applies_to,
        evaluator_name: e.evaluator_name,
        mode: e.mode ?? 'enforce',
        count: e.count,
        total_duration_ms: e.total_duration_ms,
      });
    }
    try {
      await this.opts.write(rollups);
      this.opts.onWritten?.(count);
    } catch (error) {
      if (this.opts.retryable?.(error)) {
        // Merge back (the cap still holds: what no longer fits is dropped and counted).
        for (const e of taken) this.add(e.bucket_ms, e, e.total_duration_ms, e.count);
        this.opts.onWriteDeferred?.(error, count);
        return;
      }
      this.opts.onWriteError?.(error, count);
      this.opts.onDropped?.(count, 'write_failed');
    }
  }
}
