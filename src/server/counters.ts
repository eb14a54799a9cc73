/**
 * The counters a server's rate and budget controls count in: in memory for one server
 * (long windows written through to the SQLite file), or PostgreSQL's shared table for
 * replicas. Made per app (buildApp), with what stats, the dashboard and /metrics read.
 */
import { MemoryCounters, type CounterUsage } from '../evaluators/counting/memory-counters.js';
import type { CountAnswer, CountRequest, Counters } from '../evaluators/types.js';
import { usedAt } from '../evaluators/counting/window.js';
import type { SharedCounterStore, Store } from '../store/types.js';
import type { ServerConfig } from './config.js';
import { ApproximateCounts } from './approximate-counts.js';
import { LeasedCounts } from './leased-counts.js';

export interface ServerCounters extends Counters {
  /** Keys with something in their window, with their use and limit. */
  usage(): Promise<CounterUsage[]>;
  close(): Promise<void>;
}

export interface ServerCountersOptions {
  /** The clock (ms since the epoch); tests inject one. */
  now?: () => number;
}

/** Idle rows of the shared table are deleted (and the keys counted) this often. */
const PRUNE_INTERVAL_MS = 60_000;

export function createServerCounters(
  store: Store,
  config: Pick<ServerConfig, 'counterMaxKeys'> & Partial<Pick<ServerConfig, 'counterTimeoutMs'>>,
  options: ServerCountersOptions = {},
): ServerCounters {
  const now = options.now ?? Date.now;
  if (store.sharedCounters) return new SharedCounters(store.sharedCounters, config.counterMaxKeys, config.counterTimeoutMs ?? 2000, now);
  const memory = new MemoryCounters({
    now,
    maxKeys: config.counterMaxKeys,
    ...(store.counterRows ? { persistence: store.counterRows } : {}),
  });
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
  /** False once the table holds the most keys allowed: a new key is then an error. */
  #allowNew = true;
  readonly #timer: NodeJS.Timeout;
  #pruning: Promise<void> | undefined;
  readonly #approximate: ApproximateCounts;
  readonly #exact: LeasedCounts;

  constructor(
    private readonly shared: SharedCounterStore,
    private readonly maxKeys: number,
    timeoutMs: number,
    private readonly now: () => number,
  ) {
    this.#approximate = new ApproximateCounts(shared, now, () => this.#allowNew);
    this.#exact = new LeasedCounts(shared, now, () => this.#allowNew, timeoutMs);
    this.#timer = setInterval(() => void this.prune(), PRUNE_INTERVAL_MS);
    this.#timer.unref();
    void this.prune();
  }

  count(request: CountRequest): Promise<CountAnswer> | CountAnswer {
    if (request.consistency === 'approximate') return this.#approximate.count(request);
    return this.#exact.count(request);
  }

  /** Deletes idle rows and notes whether new keys still fit; an outage is retried next time. */
  prune(): Promise<void> {
    this.#pruning ??= this.shared
      .pruneCounters(this.now())
      .then((left) => {
        this.#allowNew = left < this.maxKeys;
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
    await this.#pruning;
  }
}
