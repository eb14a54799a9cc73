/**
 * Counters for one server: kept in memory (exact: JavaScript runs one step's count at a
 * time), and written through to a persistence (the SQLite file) for windows of an hour or
 * more, so budgets over a day survive a restart. Idle keys (nothing left in their
 * window) are dropped; the number of keys held is capped, and a step that would need a
 * new key beyond the cap is an evaluator error (`on_error` decides), never a reset.
 */
import type { CounterRow } from '../../model/counter.js';
import type { CountAnswer, CountRequest, Counters } from '../types.js';
import { emptyState, idleAfter, take, usedAt, type WindowState } from './window.js';

/** Windows at least this long are written through to the persistence. */
export const PERSIST_MIN_WINDOW_MS = 3_600_000;

/** Keys held at most, across all controls, unless configured. */
export const DEFAULT_MAX_KEYS = 100_000;

export type { CounterRow };

/** Where counters of long windows are kept across restarts (store/sqlite/counters.ts). */
export interface CounterPersistence {
  /** Every row not yet expired at `now`. */
  loadCounters(now: number): CounterRow[];
  saveCounter(row: CounterRow): void;
  /** Deletes rows expired before `now`. */
  deleteExpiredCounters(now: number): void;
}

/** A key's use, for stats, the dashboard and metrics. */
export interface CounterUsage {
  control_id: number;
  counter: string;
  key: string;
  kind: 'rate' | 'budget';
  window_ms: number;
  used: number;
  max: number;
}

/** What stats and metrics read from any counters. */
export interface CounterReport {
  usage(): CounterUsage[] | Promise<CounterUsage[]>;
}

export interface MemoryCountersOptions {
  now?: () => number;
  persistence?: CounterPersistence;
  maxKeys?: number;
}

interface Entry {
  row: Omit<CounterRow, 'idx' | 'val' | 'expires_at'>;
  state: WindowState;
}

export class MemoryCounters implements Counters, CounterReport {
  readonly #entries = new Map<string, Entry>();
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
      for (const row of this.#persistence.loadCounters(this.#now())) {
        const { idx, val, expires_at: _expires, ...rest } = row;
        this.#entries.set(entryKey(row.counter, row.key), { row: rest, state: { idx, val } });
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
    }
    if (entry === undefined) {
      if (this.#entries.size >= this.#sweepAt || this.#entries.size >= this.maxKeys) this.sweep();
      if (this.#entries.size >= this.maxKeys) {
        throw new Error(`too many distinct keys counted (${this.maxKeys}, GUARD_COUNTER_MAX_KEYS); this key cannot be counted`);
      }
      entry = {
        row: { counter: request.counter, control_id: request.control_id, key: request.key, kind: request.kind, window_ms: request.window_ms, max: request.max },
        state: emptyState(),
      };
      this.#entries.set(id, entry);
    }
    entry.row.max = request.max;
    const result = take(entry.state, now, request.window_ms, request.amount, request.max, request.always);
    if (this.#persistence && request.window_ms >= PERSIST_MIN_WINDOW_MS) {
      this.#persistence.saveCounter({ ...entry.row, idx: entry.state.idx, val: entry.state.val, expires_at: idleAfter(entry.state, request.window_ms) });
    }
    return result;
  }

  /** Drops idle keys (and expired persisted rows). */
  sweep(): void {
    const now = this.#now();
    for (const [id, entry] of this.#entries) {
      if (idleAfter(entry.state, entry.row.window_ms) <= now) this.#entries.delete(id);
    }
    this.#persistence?.deleteExpiredCounters(now);
    this.#sweepAt = Math.max(1024, this.#entries.size * 2);
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

function entryKey(counter: string, key: string): string {
  return `${counter}\u0000${key}`;
}
