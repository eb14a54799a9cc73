/**
 * Counters for one server: kept in memory (exact: JavaScript runs one step's count at a
 * time), and written through to a persistence (the SQLite file) for windows of an hour or
 * more, so budgets over a day survive a restart. Idle keys (nothing left in their
 * window) are dropped; the number of keys held is capped per control, and a step that
 * would need a new key beyond its control's cap is an evaluator error (`on_error`
 * decides: deny controls fail closed), never a reset. One control flooded with keys
 * leaves every other control counting.
 */
import type { CountAnswer, CounterRow, CounterRowStore, CounterUsage, CountRequest, Counters, HeldCount } from './types.js';
import { emptyState, idleAfter, stillInWindow, take, usedAt, type WindowState } from './window.js';

/** Windows at least this long are written through to the persistence. */
export const PERSIST_MIN_WINDOW_MS = 3_600_000;

/** Keys held at most per control, unless configured. */
export const DEFAULT_MAX_KEYS = 100_000;

/** Where counters of long windows are kept across restarts (store/sqlite/counters.ts). */
export type CounterPersistence = CounterRowStore;

export interface MemoryCountersOptions {
  now?: () => number;
  persistence?: CounterPersistence;
  maxKeys?: number;
}

interface Entry {
  row: Omit<CounterRow, 'idx' | 'val' | 'expires_at' | 'since'>;
  state: WindowState;
  /** When the state began (made, or emptied by a window change): counts from before are not in it. */
  since: number;
}

export class MemoryCounters implements Counters {
  readonly #entries = new Map<string, Entry>();
  /** Keys held per control id. */
  readonly #perControl = new Map<number, number>();
  readonly #now: () => number;
  readonly #persistence: CounterPersistence | undefined;
  readonly maxKeys: number;
  /** Entry count at which idle keys are next swept: O(1) amortised per key added. */
  #sweepAt = 1024;

  constructor(options: MemoryCountersOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#persistence = options.persistence;
    this.maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
    if (this.#persistence) {
      const now = this.#now();
      for (const row of this.#persistence.loadCounters(now)) {
        const { idx, val, expires_at: _expires, since, ...rest } = row;
        // A row read back holds the counts written through since it began (a window changed
        // and changed back before the restart emptied it); a row of an earlier version does
        // not say, so it holds none that anything could take off.
        this.#add(entryKey(row.counter, row.key), { row: rest, state: { idx, val }, since: since ?? now });
      }
    }
  }

  count(request: CountRequest): CountAnswer {
    const now = this.#now();
    const id = entryKey(request.counter, request.key);
    let entry = this.#entries.get(id);
    if (entry !== undefined && entry.row.window_ms !== request.window_ms) {
      // A control's window changed: its buckets no longer mean the same time.
      entry.state = emptyState();
      entry.row.window_ms = request.window_ms;
      entry.since = now;
    }
    if (entry === undefined) {
      const held = () => this.#perControl.get(request.control_id) ?? 0;
      if (this.#entries.size >= this.#sweepAt || held() >= this.maxKeys) this.sweep();
      if (held() >= this.maxKeys) throw new Error(keyCapMessage(this.maxKeys));
      entry = {
        row: { counter: request.counter, control_id: request.control_id, key: request.key, kind: request.kind, window_ms: request.window_ms, max: request.max },
        state: emptyState(),
        since: now,
      };
      this.#add(id, entry);
    }
    entry.row.max = request.max;
    const result = take(entry.state, now, request.window_ms, request.amount, request.max, request.always);
    if (this.#persistence && request.window_ms >= PERSIST_MIN_WINDOW_MS) {
      this.#persistence.saveCounter({ ...entry.row, idx: entry.state.idx, val: entry.state.val, expires_at: idleAfter(entry.state, request.window_ms), since: entry.since });
    }
    return result;
  }

  /** The counters' clock. */
  now(): number {
    return this.#now();
  }

  /**
   * Whether a count made at `at` (this clock) is still held: its key's state began before
   * it, with the same window, and it has not slid out. A restart keeps only the rows of
   * long windows, so a short window's key made since holds none of the earlier counts.
   */
  holds(count: HeldCount): boolean {
    const entry = this.#entries.get(entryKey(count.counter, count.key));
    if (entry === undefined || entry.row.window_ms !== count.window_ms || entry.since > count.at) return false;
    return stillInWindow(count.at, this.#now(), count.window_ms);
  }

  /** Drops idle keys (and expired persisted rows). */
  sweep(): void {
    const now = this.#now();
    for (const [id, entry] of this.#entries) {
      if (idleAfter(entry.state, entry.row.window_ms) > now) continue;
      this.#entries.delete(id);
      const left = (this.#perControl.get(entry.row.control_id) ?? 1) - 1;
      if (left > 0) this.#perControl.set(entry.row.control_id, left);
      else this.#perControl.delete(entry.row.control_id);
    }
    this.#persistence?.deleteExpiredCounters(now);
    this.#sweepAt = Math.max(1024, this.#entries.size * 2);
  }

  #add(id: string, entry: Entry): void {
    this.#entries.set(id, entry);
    this.#perControl.set(entry.row.control_id, (this.#perControl.get(entry.row.control_id) ?? 0) + 1);
  }

  /** Keys held (idle ones included until the next sweep). */
  get size(): number {
    return this.#entries.size;
  }

  usage(): CounterUsage[] {
    const now = this.#now();
    const out: CounterUsage[] = [];
    for (const { row, state } of this.#entries.values()) {
      const used = usedAt(state, now, row.window_ms);
      if (used === 0) continue;
      out.push({ control_id: row.control_id, counter: row.counter, key: row.key, kind: row.kind, window_ms: row.window_ms, used, max: row.max });
    }
    return out;
  }
}

/** Why a new key was refused: the same words for every store (docs/evaluators.md). */
export function keyCapMessage(maxKeys: number | null): string {
  const cap = maxKeys === null ? '' : ` (${maxKeys}, GUARD_COUNTER_MAX_KEYS)`;
  return `too many distinct keys counted for this control${cap}; this key cannot be counted until some of its keys go idle`;
}

function entryKey(counter: string, key: string): string {
  return `${counter}\u0000${key}`;
}
