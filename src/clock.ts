/**
 * The clocks that time sessions and counters.
 *
 * `monotonicNow` is epoch milliseconds that move with the process's monotonic clock,
 * anchored to the wall clock once, when the process starts: a step of the wall clock
 * (NTP correcting a clock that ran behind, an operator's date) cannot age every session
 * at once or move every counter's window.
 *
 * A `DatabaseClock` is the time on the database server's clock, for replicas that share
 * sessions and counters on PostgreSQL: each replica reading its own clock would let one
 * whose clock runs ahead (a missed NTP step, a resumed VM) prune another replica's live
 * session, or start a new window of a rate limit early for everyone. The replica sets
 * its clock to the database's when asked (at start, and at each prune of the sessions and
 * counters that read it) and runs on the monotonic clock between. One clock per replica,
 * made by buildApp, serves its sessions and its counters.
 */

export function monotonicNow(): number {
  return performance.timeOrigin + performance.now();
}

export class DatabaseClock {
  /** The database's clock less the replica's, in ms. */
  #offset = 0;
  #isSet = false;
  /** A reading under way, which callers asking meanwhile join. */
  #reading: Promise<void> | undefined;

  constructor(
    /** The database server's clock as its answer arrives, in ms since the epoch (the store allows for the query's round trip alone). */
    private readonly readDatabase: () => Promise<number>,
    /** The replica's clock between readings (tests inject one). */
    readonly localNow: () => number = monotonicNow,
  ) {}

  /** Whether the clock was read once: before, `now()` is the replica's own clock. */
  get isSet(): boolean {
    return this.#isSet;
  }

  /** The time on the database's clock, as last read. */
  now(): number {
    return this.localNow() + this.#offset;
  }

  /** Reads the database's clock (its time as the answer arrives); joins a reading under way. */
  read(): Promise<void> {
    this.#reading ??= this.#readOnce().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  /**
   * Resolves once the clock was read: at once when it was, else after the reading under
   * way, or a new one when that failed. Rejects while the database's clock cannot be read:
   * on the replica's own clock a step could restart another replica's session or count
   * into a window the others do not.
   */
  async ready(): Promise<void> {
    if (this.#isSet) return;
    if (this.#reading !== undefined) await this.#reading.catch(() => undefined);
    if (!this.#isSet) await this.read();
  }

  async #readOnce(): Promise<void> {
    const database = await this.readDatabase();
    this.#offset = database - this.localNow();
    this.#isSet = true;
  }
}
