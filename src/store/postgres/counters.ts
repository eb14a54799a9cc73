/**
 * Counters of rate and budget controls shared by replicas. Each counted step is one
 * call of `counter_take` (migration 5): it locks the key's row, drops buckets that left
 * the window, checks and adds, and answers the sum, all in one statement and one round
 * trip. The row lock serialises replicas counting the same key, so the limit holds exactly.
 * A statement that does not answer within the timeout fails (the control's on_error).
 */
import type { SharedCountRequest, SharedCounterStore, StoredCounter } from '../types.js';
import type { PostgresDatabase } from './database.js';
import { mapPgError } from './errors.js';

interface CounterDbRow {
  counter: string;
  key: string;
  control_id: string;
  kind: string;
  window_ms: number;
  max: number;
  buckets: string[];
  sums: number[];
  expires_at: number;
}

export class PostgresCounters implements SharedCounterStore {
  constructor(
    private readonly database: PostgresDatabase,
    /** Longest a counting statement may take, waiting for a connection included (ms). */
    private readonly timeoutMs = 2000,
  ) {}

  async countShared(request: SharedCountRequest, now: number, allowNewKey: boolean): Promise<{ used: number; over: boolean }> {
    const query = this.database.pool.query<{ used: number; over: boolean }>({
      text: 'SELECT used, over FROM counter_take($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
      values: [
        request.counter,
        request.key,
        request.control_id,
        request.kind,
        request.window_ms,
        now,
        request.amount,
        request.max,
        request.always,
        allowNewKey,
      ],
      query_timeout: this.timeoutMs,
    } as { text: string; values: unknown[] });
    let timer: NodeJS.Timeout | undefined;
    // The pool may wait for a connection (a database that stopped answering) before the
    // statement's own timeout starts: the whole call is bounded too.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`counting timed out after ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      const result = await Promise.race([query, deadline]);
      const row = result.rows[0];
      if (!row) throw new Error('counter_take answered no row');
      return { used: Number(row.used), over: row.over };
    } catch (error) {
      throw mapPgError(error);
    } finally {
      clearTimeout(timer);
      // A query that lost the race settles later; its failure is already reported.
      query.catch(() => undefined);
    }
  }

  async counterUsage(now: number): Promise<StoredCounter[]> {
    const rows = await this.database.query<CounterDbRow>('SELECT * FROM counters WHERE expires_at > $1 ORDER BY counter, key LIMIT 10000', [now]);
    return rows.map((r) => ({
      counter: r.counter,
      key: r.key,
      control_id: Number(r.control_id),
      kind: r.kind === 'budget' ? 'budget' : 'rate',
      window_ms: r.window_ms,
      max: r.max,
      idx: r.buckets.map(Number),
      val: r.sums.map(Number),
      expires_at: r.expires_at,
    }));
  }

  async pruneCounters(now: number): Promise<number> {
    await this.database.query('DELETE FROM counters WHERE expires_at <= $1', [now]);
    const rows = await this.database.query<{ n: string }>('SELECT count(*) AS n FROM counters');
    return Number(rows[0]?.n ?? 0);
  }
}
