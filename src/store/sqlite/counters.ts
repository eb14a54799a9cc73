/**
 * Counters of rate and budget controls with long windows, kept in the SQLite file so
 * that a budget over a day survives a restart. The server counts in memory and writes a
 * key's row through after each counted step (one small upsert); rows are read once, when
 * the server starts.
 */
import type Database from 'better-sqlite3';
import { counterKindOf } from '../../counting/index.js';
import type { StoredCounter } from '../types.js';
import type { SqliteDatabase } from './database.js';

interface CounterDbRow {
  counter: string;
  key: string;
  control_id: number;
  kind: string;
  window_ms: number;
  max: number;
  buckets: string;
  sums: string;
  expires_at: number;
  since: number | null;
}

export class SqliteCounters {
  readonly #load: Database.Statement<[number], CounterDbRow>;
  readonly #save: Database.Statement;
  readonly #expire: Database.Statement<[number]>;

  constructor(private readonly database: SqliteDatabase) {
    const db = database.db;
    this.#load = db.prepare('SELECT * FROM counters WHERE expires_at > ?');
    this.#save = db.prepare(`INSERT INTO counters (counter, key, control_id, kind, window_ms, max, buckets, sums, expires_at, since)
      VALUES (@counter, @key, @control_id, @kind, @window_ms, @max, @buckets, @sums, @expires_at, @since)
      ON CONFLICT (counter, key) DO UPDATE SET control_id = excluded.control_id, kind = excluded.kind,
        window_ms = excluded.window_ms, max = excluded.max, buckets = excluded.buckets, sums = excluded.sums,
        expires_at = excluded.expires_at, since = excluded.since`);
    this.#expire = db.prepare('DELETE FROM counters WHERE expires_at <= ?');
  }

  loadCounters(now: number): StoredCounter[] {
    return this.database.read(() =>
      this.#load.all(now).map((r) => ({
        counter: r.counter,
        key: r.key,
        control_id: r.control_id,
        kind: counterKindOf(r.kind),
        window_ms: r.window_ms,
        max: r.max,
        idx: JSON.parse(r.buckets) as number[],
        val: JSON.parse(r.sums) as number[],
        expires_at: r.expires_at,
        since: r.since,
      })),
    );
  }

  /** One statement: SQLite makes it atomic and durable on its own (WAL, synchronous NORMAL). */
  saveCounter(row: StoredCounter): void {
    this.database.read(() =>
      this.#save.run({
        counter: row.counter,
        key: row.key,
        control_id: row.control_id,
        kind: row.kind,
        window_ms: row.window_ms,
        max: row.max,
        buckets: JSON.stringify(row.idx),
        sums: JSON.stringify(row.val),
        expires_at: row.expires_at,
        since: row.since ?? null,
      }),
    );
  }

  deleteExpiredCounters(now: number): void {
    this.database.read(() => this.#expire.run(now));
  }
}
