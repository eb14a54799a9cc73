/**
 * The counters a server's rate and budget controls count in: in memory for one server
 * (long windows written through to the SQLite file), or PostgreSQL's shared table for
 * replicas. Made per app (buildApp), with what stats, the dashboard and /metrics read.
 */
import { ApproximateCounts } from './approximate-counts.js';
import { LeasedCounts } from './leased-counts.js';
import { keyCapMessage, MemoryCounters } from './memory-counters.js';
import type { CountAnswer, CounterRowStore, CounterUsage, CountRequest, Counters, SharedCounterStore } from './types.js';
import { usedAt } from './window.js';

export interface ServerCounters extends Counters {
  /** Keys with something in their window, with their use and limit. */
  usage(): Promise<CounterUsage[]>;
  close(): Promise<void>;
}

export interface ServerCountersOptions {
  /** The clock (ms since the epoch); tests inject one. */
  now?: () => number;
}

/** Where a store keeps counts: the SQLite file's rows, or PostgreSQL's shared table (store/store-sharing.ts). */
export interface CounterStores {
  readonly sharing: { readonly mode: 'local'; readonly counterRows: CounterRowStore } | { readonly mode: 'shared'; readonly counters: SharedCounterStore };
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
  const now = options.now ?? Date.now;
  const { sharing } = store;
  if (sharing.mode === 'shared') return new SharedCounters(sharing.counters, config.counterMaxKeys, config.counterTimeoutMs ?? 2000, now);
  const memory = new MemoryCounters({ now, maxKeys: config.counterMaxKeys, persistence: sharing.counterRows });
  return {
    count: (request) => memory.count(request),
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
  readonly #timer: NodeJS.Timeout;
  #pruning: Promise<void> | undefined;
  #prunePending: Promise<void> | undefined;
  readonly #approximate: ApproximateCounts;
  readonly #exact: LeasedCounts;

  constructor(
    private readonly shared: SharedCounterStore,
    private readonly maxKeys: number,
    timeoutMs: number,
    private readonly now: () => number,
  ) {
    const allowNew = (controlId: number) => !this.#full.has(controlId);
    this.#approximate = new ApproximateCounts(shared, now, allowNew);
    this.#exact = new LeasedCounts(shared, now, allowNew, timeoutMs);
    this.#timer = setInterval(() => void this.prune(), PRUNE_INTERVAL_MS);
    this.#timer.unref();
    void this.prune();
  }

  count(request: CountRequest): Promise<CountAnswer> | CountAnswer {
    const answer = request.consistency === 'approximate' ? this.#approximate.count(request) : this.#exact.count(request);
    if (!(answer instanceof Promise)) return answer;
    // The database words the refusal its own way; the error says it as memory counters do.
    return answer.catch((err: unknown) => {
      if (err instanceof Error && err.message.includes('too many distinct keys')) throw new Error(keyCapMessage(this.maxKeys));
      throw err;
    });
  }

  /**
   * Deletes idle rows and notes whether new keys still fit; an outage is retried next time.
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
    this.#pruning = this.shared
      .pruneCounters(this.now())
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
    const at = this.now();
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
