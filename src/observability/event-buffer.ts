import type { ObservabilityEvent } from '../model/index.js';

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The store accepts at most this many events per insert. */
export const WRITE_BATCH_SIZE = 1000;

export interface EventBufferOptions {
  /** Events held in memory at most, counting those being written. */
  capacity: number;
  write(batch: ObservabilityEvent[]): Promise<void>;
  /** A flush starts by itself once this many events wait (default: half the capacity). */
  flushThreshold?: number;
  onWritten?(count: number): void;
  onDropped?(count: number, reason: 'buffer_full' | 'write_failed'): void;
  onWriteError?(error: unknown, count: number): void;
  /**
   * A failed write for which this answers true (the database is unreachable) keeps its
   * events in the buffer for the next flush instead of dropping them; new events that do
   * not fit meanwhile are dropped as buffer_full. Default: every failure drops.
   */
  retryable?(error: unknown): boolean;
  /** A retryable write failed; `count` events stay buffered. */
  onWriteDeferred?(error: unknown, count: number): void;
}

/**
 * A bounded queue of events between evaluations and the store. `push` never waits and
 * never grows memory past `capacity`: what does not fit is dropped and counted. A flush
 * swaps the pending array out and writes it in batches; one flush runs at a time.
 * A failed write drops that batch (counted as write_failed) instead of retrying, so a
 * broken store cannot pin memory or stall later flushes, except failures `retryable`
 * accepts (an unreachable database): those events stay buffered for the next timed flush,
 * still within `capacity`.
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
          if (this.opts.retryable?.(error)) {
            // Put the unwritten rest back in front; capacity already counted it.
            const rest = batch.slice(start);
            this.pending = rest.concat(this.pending);
            this.inFlight = 0;
            this.deferred = true;
            this.again = false;
            this.opts.onWriteDeferred?.(error, rest.length);
            return;
          }
          this.opts.onWriteError?.(error, chunk.length);
          this.opts.onDropped?.(chunk.length, 'write_failed');
        }
        this.inFlight -= chunk.length;
        // SQLite writes are synchronous: let waiting requests run between batches.
        if (start + WRITE_BATCH_SIZE < batch.length) await yieldToEventLoop();
      }
      this.inFlight = 0;
    } while (this.again || this.pending.length >= this.threshold);
  }
}
