import type { ObservabilityEvent } from '../model/index.js';

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The store accepts at most this many events per insert. */
export const WRITE_BATCH_SIZE = 1000;

/**
 * A batch the store refused is written again one event at a time. After this many refusals
 * in a row with none written the store is taken to be broken rather than the rows bad, and
 * the batch is dropped as write_failed instead of tried one by one to its end (so is a
 * batch none of whose events the store took).
 */
export const MAX_REFUSALS_IN_A_ROW = 10;

export type DropReason = 'buffer_full' | 'write_failed' | 'rejected';

/**
 * How soon a flush follows an urgent event (a deny): what a crash (kill -9, a power cut)
 * can lose of denied steps is bounded by this, not by the flush interval.
 */
export const DENY_FLUSH_MS = 100;

/** An enforced deny match: the record of a blocked step, worth writing at once. */
export function isUrgentEvent(e: ObservabilityEvent): boolean {
  return e.matched && e.action === 'deny' && e.mode !== 'shadow';
}

export interface EventBufferOptions {
  /** Events held in memory at most, counting those being written. */
  capacity: number;
  write(batch: ObservabilityEvent[]): Promise<void>;
  /** A flush starts by itself once this many events wait (default: half the capacity). */
  flushThreshold?: number;
  onWritten?(count: number): void;
  onDropped?(count: number, reason: DropReason): void;
  /** A batch failed and was dropped (write_failed): the store refused it and its events one by one. */
  onWriteError?(error: unknown, count: number): void;
  /** A batch failed; written again one event at a time, `rejected` of its `count` events were refused and dropped. */
  onRowsRejected?(error: unknown, rejected: number, count: number): void;
  /**
   * A failed write for which this answers true (the database is unreachable) keeps its
   * events in the buffer for the next flush instead of dropping them; new events that do
   * not fit meanwhile are dropped as buffer_full. Default: every failure drops.
   */
  retryable?(error: unknown): boolean;
  /** A retryable write failed; `count` events stay buffered. */
  onWriteDeferred?(error: unknown, count: number): void;
  /** Events that start a flush within DENY_FLUSH_MS (isUrgentEvent): the rest wait for the interval or the threshold. */
  urgent?: (event: ObservabilityEvent) => boolean;
}

function hasUrgent(events: readonly ObservabilityEvent[], count: number, urgent: (e: ObservabilityEvent) => boolean): boolean {
  for (let i = 0; i < count; i++) if (urgent(events[i]!)) return true;
  return false;
}

/**
 * A bounded queue of events between evaluations and the store. `push` never waits and
 * never grows memory past `capacity`: what does not fit is dropped and counted. A flush
 * swaps the pending array out and writes it in batches; one flush runs at a time.
 * A failed write is tried again one event at a time, so one event the store refuses
 * (counted as rejected) does not take the rest of its batch with it; a store that refuses
 * every event drops the batch (write_failed) rather than being retried, so a broken store
 * cannot pin memory or stall later flushes. Failures `retryable` accepts (an unreachable
 * database) are different: those events stay buffered for the next timed flush, still
 * within `capacity`.
 */
export class EventBuffer {
  private pending: ObservabilityEvent[] = [];
  private inFlight = 0;
  private running: Promise<void> | null = null;
  private again = false;
  /** Set after a retryable failure: only timed or explicit flushes retry, not every push. */
  private deferred = false;
  private readonly capacity: number;
  private readonly threshold: number;
  private urgentTimer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: EventBufferOptions) {
    this.capacity = Math.max(1, Math.floor(opts.capacity));
    this.threshold = Math.max(1, Math.min(this.capacity, opts.flushThreshold ?? Math.ceil(this.capacity / 2)));
  }

  /** Events in memory: waiting plus being written. */
  get size(): number {
    return this.pending.length + this.inFlight;
  }

  push(events: readonly ObservabilityEvent[]): { enqueued: number; dropped: number } {
    const room = Math.max(0, this.capacity - this.size);
    const enqueued = Math.min(room, events.length);
    for (let i = 0; i < enqueued; i++) this.pending.push(events[i]!);
    const dropped = events.length - enqueued;
    if (dropped > 0) this.opts.onDropped?.(dropped, 'buffer_full');
    if (this.pending.length >= this.threshold && !this.running && !this.deferred) void this.flush();
    else if (this.urgentTimer === null && !this.deferred && this.opts.urgent && hasUrgent(events, enqueued, this.opts.urgent)) {
      // One timer for all the urgent events of the next DENY_FLUSH_MS: a burst of denies is one flush.
      this.urgentTimer = setTimeout(() => {
        this.urgentTimer = null;
        void this.flush();
      }, DENY_FLUSH_MS);
      this.urgentTimer.unref();
    }
    return { enqueued, dropped };
  }

  /** Writes everything pending now; resolves when it is written (or dropped on failure). */
  flush(): Promise<void> {
    if (this.running) {
      // Events pushed during a running flush are taken by one more round after it.
      this.again = true;
      return this.running;
    }
    this.running = this.drain().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async drain(): Promise<void> {
    this.deferred = false;
    do {
      this.again = false;
      const batch = this.pending;
      this.pending = [];
      this.inFlight = batch.length;
      for (let start = 0; start < batch.length; start += WRITE_BATCH_SIZE) {
        const chunk = batch.slice(start, start + WRITE_BATCH_SIZE);
        try {
          await this.opts.write(chunk);
          this.opts.onWritten?.(chunk.length);
        } catch (error) {
          const rest = this.opts.retryable?.(error) ? 0 : await this.writeOneByOne(chunk, error);
          if (rest !== null) {
            // Put the unwritten rest back in front; capacity already counted it.
            const unwritten = batch.slice(start + rest);
            this.pending = unwritten.concat(this.pending);
            this.inFlight = 0;
            this.deferred = true;
            this.again = false;
            this.opts.onWriteDeferred?.(error, unwritten.length);
            return;
          }
        }
        this.inFlight -= chunk.length;
        // SQLite writes are synchronous: let waiting requests run between batches.
        if (start + WRITE_BATCH_SIZE < batch.length) await yieldToEventLoop();
      }
      this.inFlight = 0;
    } while (this.again || this.pending.length >= this.threshold);
  }

  /**
   * Writes a refused batch one event at a time; drops what the store refuses. Returns
   * null when done, or the index of the first event not written when the database became
   * unreachable meanwhile (those stay buffered).
   */
  private async writeOneByOne(chunk: ObservabilityEvent[], batchError: unknown): Promise<number | null> {
    let rejected = 0;
    let written = 0;
    let inARow = 0;
    let firstError: unknown = batchError;
    for (let i = 0; i < chunk.length; i++) {
      if (inARow >= MAX_REFUSALS_IN_A_ROW && written === 0) {
        const rest = chunk.length - i + rejected;
        this.opts.onWriteError?.(firstError, rest);
        this.opts.onDropped?.(rest, 'write_failed');
        return null;
      }
      try {
        await this.opts.write([chunk[i]!]);
        written++;
        inARow = 0;
        this.opts.onWritten?.(1);
      } catch (error) {
        if (this.opts.retryable?.(error)) {
          this.report(rejected, chunk.length, firstError);
          return i;
        }
        if (rejected === 0) firstError = error;
        rejected++;
        inARow++;
      }
    }
    if (written === 0) {
      // Refused whole and one by one: the store is failing, not these events.
      this.opts.onWriteError?.(firstError, chunk.length);
      this.opts.onDropped?.(chunk.length, 'write_failed');
      return null;
    }
    this.report(rejected, chunk.length, firstError);
    return null;
  }

  private report(rejected: number, count: number, error: unknown): void {
    if (rejected === 0) return;
    this.opts.onRowsRejected?.(error, rejected, count);
    this.opts.onDropped?.(rejected, 'rejected');
  }
}
