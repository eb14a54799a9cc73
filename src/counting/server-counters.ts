/**
 * The counters a server's rate and budget controls count in: in memory for one server
 * (long windows written through to the SQLite file), or PostgreSQL's shared table for
 * replicas. Made per app (buildApp), with what stats, the dashboard and /metrics read.
 *
 * Replicas count on the database's clock (src/clock.ts), the one their sessions
 * read: a key's window moves with the latest time any replica counted it at, so one
 * replica whose clock ran ahead would start a new window for every replica early (and
 * let a key through its limit twice), and one whose wall clock was stepped would do the
 * same until it was corrected. Until the replica's clock was first read, a step waits for
 * it, and fails while it cannot be read (its control's on_error decides), never counting
 * on the replica's own clock.
 */
import { DatabaseClock, monotonicNow } from '../clock.js';
import { ApproximateCounts } from './approximate-counts.js';
import { LeasedCounts } from './leased-counts.js';
import { keyCapMessage, MemoryCounters } from './memory-counters.js';
import type { ClockedCounters, CountAnswer, CounterRowStore, CounterUsage, CountRequest, HeldCount, SharedCounterStore } from './types.js';
import { stillInWindow, usedAt } from './window.js';

/** Replicas read a key's row to tell whether it holds a count (`holds`). */
export interface ServerCounters extends ClockedCounters {
  /** Keys with something in their window, with their use and limit. */
  usage(): Promise<CounterUsage[]>;
  close(): Promise<void>;
}

export interface ServerCountersOptions {
  /**
   * The server's own clock (ms since the epoch; tests inject one): what one server counts
   * by, and what a replica runs on between readings of the database's clock.
   */
  now?: () => number;
  /** A replica's clock, shared with its sessions; else the counters read the database's clock themselves. */
  clock?: DatabaseClock;
}

/** Where a store keeps counts: the SQLite file's rows, or PostgreSQL's shared table (store/store-sharing.ts). */
export interface CounterStores {
  readonly sharing:
    | { readonly mode: 'local'; readonly counterRows: CounterRowStore }
    | { readonly mode: 'shared'; readonly counters: SharedCounterStore; databaseTime(): Promise<number> };
}

/** GUARD_COUNTER_MAX_KEYS and GUARD_COUNTER_TIMEOUT_MS (server/config.ts). */
export interface CounterLimits {
  readonly counterMaxKeys: number;
  readonly counterTimeoutMs?: number;
}

/** Idle rows of the shared table are deleted (and the keys counted) this often. */
const PRUNE_INTERVAL_MS = 60_000;

export function createServerCounters(
  store: CounterStores,
  config: CounterLimits,
  options: ServerCountersOptions = {},
): ServerCounters {
  const { sharing } = store;
  if (sharing.mode === 'shared') {
    const clock = options.clock ?? new DatabaseClock(() => sharing.databaseTime(), options.now);
    return new SharedCounters(sharing.counters, config.counterMaxKeys, config.counterTimeoutMs ?? 2000, clock);
  }
  // One server counts on the monotonic clock, so that a step of the wall clock (NTP, an
  // operator's date) does not move every window at once: forward, it would forget every
  // key's counts. Its times stay epoch milliseconds, anchored to the wall clock when the
  // process starts, so the rows of long windows in the SQLite file compare with the next
  // process's times. What a restart can misjudge is a wall-clock step made while the
  // earlier process ran (that process kept the clock of its start): its rows then look
  // older by a step forward, or newer by a step back (kept longer: window.ts adds a step
  // to a bucket ahead of its time rather than before it). The wall clock would forget the
  // counts at the step itself instead, in every process.
  const memory = new MemoryCounters({ now: options.now ?? monotonicNow, maxKeys: config.counterMaxKeys, persistence: sharing.counterRows });
  return {
    count: (request) => memory.count(request),
    now: () => memory.now(),
    holds: (count) => memory.holds(count),
    usage: async () => memory.usage(),
    close: async () => undefined,
  };
}

/**
 * PostgreSQL: `exact` counts each step against the shared table, most of them from room
 * leased under the limit (leased-counts.ts); `approximate` counts in memory and adds the
 * counts to the shared table in batches (approximate-counts.ts).
 */
class SharedCounters implements ServerCounters {
  /** Controls whose keys fill their cap in the table: a new key of theirs is then an error. */
  #full: ReadonlySet<number> = new Set();
  readonly #now: () => number;
  readonly #timer: NodeJS.Timeout;
  #pruning: Promise<void> | undefined;
  #prunePending: Promise<void> | undefined;
  readonly #approximate: ApproximateCounts;
  readonly #exact: LeasedCounts;

  constructor(
    private readonly shared: SharedCounterStore,
    private readonly maxKeys: number,
    private readonly timeoutMs: number,
    private readonly clock: DatabaseClock,
  ) {
    const allowNew = (controlId: number) => !this.#full.has(controlId);
    this.#now = () => clock.now();
    this.#approximate = new ApproximateCounts(shared, this.#now, allowNew);
    this.#exact = new LeasedCounts(shared, this.#now, allowNew, timeoutMs);
    this.#timer = setInterval(() => void this.prune(), PRUNE_INTERVAL_MS);
    this.#timer.unref();
    void this.prune();
  }

  count(request: CountRequest): Promise<CountAnswer> | CountAnswer {
    if (!this.clock.isSet) return this.#clockRead().then(() => this.count(request));
    const answer = request.consistency === 'approximate' ? this.#approximate.count(request) : this.#exact.count(request);
    if (!(answer instanceof Promise)) return answer;
    // The database words the refusal its own way; the error says it as memory counters do.
    return answer.catch((err: unknown) => {
      if (err instanceof Error && err.message.includes('too many distinct keys')) throw new Error(keyCapMessage(this.maxKeys));
      throw err;
    });
  }

  now(): number {
    return this.#now();
  }

  /**
   * The shared table keeps counts across restarts and replicas, but a window change
   * empties the key, and a window changed back is no longer the one the count went into:
   * a count made at `at` is held while it is in its window and the key's counts began
   * before it (counter-since.ts). A row made by another replica whose clock was a little
   * ahead reads as begun after it: the step is then counted in full, never let through.
   */
  async holds(count: HeldCount): Promise<boolean> {
    if (!stillInWindow(count.at, this.#now(), count.window_ms)) return false;
    const began = await this.shared.counterBegan(count.counter, count.key);
    return began !== null && began.window_ms === count.window_ms && began.since !== null && began.since <= count.at;
  }

  /** The replica's first reading of the database's clock, waited for at most as long as a count. */
  async #clockRead(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`counting timed out after ${this.timeoutMs} ms (reading the database's clock)`)), this.timeoutMs);
    });
    try {
      await Promise.race([this.clock.ready(), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Sets the clock to the database's, deletes idle rows and notes whether new keys still
   * fit; an outage is retried next time.
   * Called while one runs, it answers with one that starts after it (at most one waits):
   * the running one may have read the rows before the caller's counts were written.
   */
  prune(): Promise<void> {
    if (this.#pruning !== undefined) {
      this.#prunePending ??= this.#pruning.then(() => {
        this.#prunePending = undefined;
        return this.prune();
      });
      return this.#prunePending;
    }
    this.#pruning = this.clock
      .read()
      .then(() => this.shared.pruneCounters(this.#now()))
      .then((left) => {
        const full = new Set<number>();
        for (const [controlId, keys] of left) if (keys >= this.maxKeys) full.add(controlId);
        this.#full = full;
      })
      .catch(() => undefined)
      .finally(() => {
        this.#pruning = undefined;
      });
    return this.#pruning;
  }

  async usage(): Promise<CounterUsage[]> {
    await this.clock.ready();
    const at = this.#now();
    const rows = await this.shared.counterUsage(at);
    const out: CounterUsage[] = [];
    for (const row of rows) {
      const used = usedAt({ idx: row.idx, val: row.val }, at, row.window_ms);
      if (used === 0) continue;
      out.push({ control_id: row.control_id, counter: row.counter, key: row.key, kind: row.kind, window_ms: row.window_ms, used, max: row.max });
    }
    return out;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#approximate.close();
    await this.#exact.close();
    await this.#prunePending;
    await this.#pruning;
  }
}
