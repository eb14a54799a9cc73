/**
 * Records evaluated steps for `plan --replay`, off the hot path: `record` only samples and
 * queues a reference (synchronous, O(1), never throws); the flush timer redacts, measures and
 * writes the queue to the store in batches. The queue is bounded: when the store falls behind, new steps are dropped and
 * counted rather than held in memory. Retention runs on its own slower timer.
 */
import { storableJsonText, type Stage, type Step } from '../model/index.js';
import type { NewRecordedStep, Store } from '../store/types.js';
import type { Redactor } from './redact.js';
import { stepRedactor } from './value-masks.js';

export interface RecorderOptions {
  sampleRate: number;
  maxStepBytes: number;
  retentionDays: number;
  /** Extra redaction rules (names or dotted paths). */
  redact: readonly string[];
  /** How often the queue is written (ms). */
  flushIntervalMs: number;
  /** Steps held at most before new ones are dropped. */
  maxQueue?: number;
  /** Rows per store write. */
  batchSize?: number;
  /** How often old steps are pruned (ms); 0 turns the timer off. */
  pruneIntervalMs?: number;
  /** Injected for tests; Math.random by default. */
  random?: () => number;
  now?: () => number;
  onError?: (error: unknown) => void;
}

export interface RecorderStats {
  /** Queued by `record` (sampled in). */
  recorded: number;
  sampled_out: number;
  too_large: number;
  dropped: number;
  written: number;
  failed_writes: number;
}

export interface RecordInput {
  agent_name: string;
  stage: Stage;
  step: Step;
  decision: 'allow' | 'deny' | 'steer' | 'ask';
  /** The step's session: replay runs a session's steps in order in one session. */
  session_id?: string | undefined;
}

export class StepRecorder {
  readonly stats: RecorderStats = { recorded: 0, sampled_out: 0, too_large: 0, dropped: 0, written: 0, failed_writes: 0 };
  readonly #store: Pick<Store, 'insertRecordedSteps' | 'pruneRecordedSteps'>;
  readonly #options: Required<Omit<RecorderOptions, 'onError'>> & Pick<RecorderOptions, 'onError'>;
  readonly #redactor: Redactor;
  #queue: Array<RecordInput & { timestamp: number }> = [];
  #flushing: Promise<void> | null = null;
  #flushTimer: NodeJS.Timeout | null = null;
  #pruneTimer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(store: Pick<Store, 'insertRecordedSteps' | 'pruneRecordedSteps'>, options: RecorderOptions) {
    this.#store = store;
    this.#options = {
      maxQueue: 10_000,
      batchSize: 1000,
      pruneIntervalMs: 3_600_000,
      random: Math.random,
      now: Date.now,
      ...options,
    };
    // By name (the rules and the secret-sounding names) and by value: credentials and card
    // numbers are masked in every string kept, whatever its field is called.
    this.#redactor = stepRedactor(options.redact);
  }

  /** Starts the flush and retention timers (unref'd: they never keep the process alive). */
  start(): this {
    const o = this.#options;
    this.#flushTimer = setInterval(() => void this.flush(), o.flushIntervalMs);
    this.#flushTimer.unref();
    if (o.pruneIntervalMs > 0) {
      this.#pruneTimer = setInterval(() => void this.prune().catch((e: unknown) => o.onError?.(e)), o.pruneIntervalMs);
      this.#pruneTimer.unref();
      void this.prune().catch((e: unknown) => o.onError?.(e));
    }
    return this;
  }

  /** Returns whether the step was queued. Synchronous and never throws. */
  record(input: RecordInput): boolean {
    const o = this.#options;
    try {
      if (this.#closed) return false;
      if (o.sampleRate < 1 && !(o.random() < o.sampleRate)) {
        this.stats.sampled_out++;
        return false;
      }
      if (this.#queue.length >= o.maxQueue) {
        this.stats.dropped++;
        return false;
      }
      // The step is not copied: the server never changes a request's step after evaluating it.
      this.#queue.push({ ...input, timestamp: o.now() });
      this.stats.recorded++;
      return true;
    } catch (error) {
      o.onError?.(error);
      return false;
    }
  }

  get queued(): number {
    return this.#queue.length;
  }

  /** Writes everything queued so far; concurrent calls share one write loop. */
  flush(): Promise<void> {
    if (this.#flushing) return this.#flushing;
    const run = async () => {
      while (this.#queue.length > 0) {
        const batch = this.#rows(this.#queue.splice(0, this.#options.batchSize));
        if (batch.length === 0) continue;
        try {
          await this.#store.insertRecordedSteps(batch);
          this.stats.written += batch.length;
        } catch (error) {
          // Lost, not retried: recordings are a sample, and retrying could pile up memory.
          this.stats.failed_writes += batch.length;
          this.#options.onError?.(error);
          return;
        }
      }
    };
    this.#flushing = run().finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  /** Redacted, serialised rows; oversized steps are skipped, not cut (a cut step replays wrong). */
  #rows(entries: Array<RecordInput & { timestamp: number }>): NewRecordedStep[] {
    const rows: NewRecordedStep[] = [];
    for (const e of entries) {
      let step_json: string;
      try {
        // Storable on both stores: NUL and lone surrogates become U+FFFD (model/text.ts).
        step_json = storableJsonText(JSON.stringify(this.#redactor.redact(e.step)));
      } catch (error) {
        this.#options.onError?.(error);
        continue;
      }
      if (Buffer.byteLength(step_json, 'utf8') > this.#options.maxStepBytes) {
        this.stats.too_large++;
        continue;
      }
      rows.push({ timestamp: new Date(e.timestamp).toISOString(), agent_name: e.agent_name, stage: e.stage, step_json, decision: e.decision, session_id: e.session_id ?? null });
    }
    return rows;
  }

  /** Deletes steps older than the retention age; returns how many. */
  prune(): Promise<number> {
    const cutoff = this.#options.now() - this.#options.retentionDays * 86_400_000;
    return this.#store.pruneRecordedSteps(new Date(cutoff).toISOString());
  }

  /** Stops the timers and writes what is left. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#flushTimer) clearInterval(this.#flushTimer);
    if (this.#pruneTimer) clearInterval(this.#pruneTimer);
    await this.flush();
  }
}
