/**
 * `consistency: approximate` on PostgreSQL: a replica counts a key's steps in memory on
 * top of the key's sum as last read from the shared table, and adds what it counted to
 * the table in one statement per key every FLUSH_INTERVAL_MS (reading the new sum back).
 * The first step of a key this replica has not seen waits for one exact count, so a
 * replica never starts from nothing. The overshoot is bounded by what the other replicas
 * admit for the key between two flushes: with R replicas, at most (R - 1) times the
 * limit within one flush interval, and nothing once every replica has flushed.
 */
import type { CountAnswer, CountRequest, SharedCounterStore } from './types.js';

export const FLUSH_INTERVAL_MS = 100;

interface Entry {
  request: CountRequest;
  /** The shared sum as of the last flush (this replica's earlier counts included). */
  base: number;
  /** Counted here since then, not yet in the table. */
  pending: number;
}

export class ApproximateCounts {
  readonly #entries = new Map<string, Entry>();
  readonly #timer: NodeJS.Timeout;
  /** The last flush asked for (under way or done), and a flush asked for that has not begun. */
  #lastFlush: Promise<void> = Promise.resolve();
  #notBegun: Promise<void> | undefined;

  constructor(
    private readonly shared: SharedCounterStore,
    private readonly now: () => number,
    /** Whether a new key of this control may be counted (its key cap: server-counters.ts). */
    private readonly allowNew: (controlId: number) => boolean,
  ) {
    this.#timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.#timer.unref();
  }

  count(request: CountRequest): CountAnswer | Promise<CountAnswer> {
    const id = `${request.counter}\u0000${request.key}`;
    const entry = this.#entries.get(id);
    if (entry === undefined) {
      // First sight of the key: one exact count, which also reads the shared sum.
      return this.shared.countShared(request, this.now(), this.allowNew(request.control_id)).then((answer) => {
        const known = this.#entries.get(id);
        if (known === undefined) this.#entries.set(id, { request, base: answer.used, pending: 0 });
        return answer;
      });
    }
    entry.request = request;
    const before = entry.base + entry.pending;
    if (request.always) {
      entry.pending += request.amount;
      return { used: before + request.amount, over: before + request.amount > request.max };
    }
    if (before + request.amount > request.max) return { used: before, over: true };
    entry.pending += request.amount;
    return { used: before + request.amount, over: false };
  }

  /**
   * Adds every key's pending count to the table and reads the sums back; drops idle keys.
   * Flushes run one after another, and each takes the counts when it begins: a call joins
   * the flush that has not begun yet, or asks for one after the flush under way, so what
   * was counted before the call is in the table when it resolves.
   */
  flush(): Promise<void> {
    if (this.#notBegun === undefined) {
      const begin = () => {
        this.#notBegun = undefined;
        return this.#flushAll();
      };
      this.#notBegun = this.#lastFlush.then(begin, begin);
      this.#lastFlush = this.#notBegun;
    }
    return this.#notBegun;
  }

  async #flushAll(): Promise<void> {
    const now = this.now();
    for (const [id, entry] of this.#entries) {
      const pending = entry.pending;
      try {
        // Added as counted (admitted here), so always; an amount of 0 just reads the sum.
        const answer = await this.shared.countShared({ ...entry.request, amount: pending, always: true }, now, true);
        // Steps counted while the statement ran stay pending, on top of the new sum.
        entry.pending -= pending;
        if (entry.pending === 0 && answer.used === 0) this.#entries.delete(id);
        else entry.base = answer.used;
      } catch {
        // The database is away: keep the pending count (steps counted meanwhile included)
        // for the next flush, and forget the base so that the key's next step waits for
        // an exact count (on_error).
        this.#entries.delete(id);
        if (entry.pending > 0) this.#orphans.push({ ...entry.request, amount: entry.pending, always: true });
      }
    }
    const orphans = this.#orphans.splice(0);
    for (const request of orphans) {
      await this.shared.countShared(request, now, true).catch(() => this.#orphans.push(request));
    }
  }

  readonly #orphans: CountRequest[] = [];

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush().catch(() => undefined);
  }
}
