/**
 * The PostgreSQL pool as the store's concerns share it: connected, migrated under an
 * advisory lock, and wrapped so that every write is one BEGIN/COMMIT on one client which
 * bumps the revision and sends NOTIFY inside the transaction (delivered on commit).
 */
import pg from 'pg';
import { inVersionOrder, type Migration } from '../migrations.js';
import { uniqueSorted } from '../records.js';
import { CHANGE_CHANNEL } from './change-listener.js';
import { isClientTimeout, mapPgError } from './errors.js';
import { postgresMigrations } from './migrations.js';
import { SYSTEM_ORIGIN, type WriteOrigin } from '../../model/index.js';
import type { NewChangeEntry } from '../history.js';
import { insertEntries } from './history.js';

export interface PostgresStoreOptions {
  /** The schema holding guardctl's tables; created when missing. Default: the server's search_path. */
  schema?: string;
  /** Most connections the pool opens. */
  maxConnections?: number;
  /** A pool connection idle this long is closed (ms, default 10,000; 0: kept open). */
  idleTimeoutMs?: number;
  /** Connecting, or waiting for a free pool connection, fails after this long. Default 5,000 ms. */
  connectionTimeoutMs?: number;
  /** The server cancels a statement running longer (`statement_timeout`). Default 10,000 ms. */
  statementTimeoutMs?: number;
  /**
   * A query with no answer this long fails on the client's own clock, so a database that
   * hangs (stopped, behind a dead link) cannot hold a request without bound; its
   * connection is then discarded. Default 15,000 ms.
   */
  queryTimeoutMs?: number;
  /** Rows deleted per statement when pruning. */
  pruneBatchSize?: number;
  /** Events per INSERT statement. */
  insertBatchSize?: number;
  /** Wait before the change listener reconnects after losing its connection. */
  listenerRetryMs?: number;
  /** Longest a rate or budget count may take before it is an evaluator error (ms, default 2000). */
  counterTimeoutMs?: number;
}

/** Readings of the database's clock per databaseTime(), of which the shortest round trip's is kept. */
const CLOCK_READINGS = 3;

/** NOTIFY payloads are limited to 8000 bytes; beyond a safe size we say "any agent". */
const MAX_NOTIFY_PAYLOAD = 7000;
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** One write transaction: its client, and what it changed (for the revision, history and NOTIFY). */
export interface WriteTx {
  client: pg.PoolClient;
  changed: boolean;
  agents: Set<string>;
  /** History entries of the writes, stored under the revision the transaction bumps. */
  entries: NewChangeEntry[];
  /** The revision once the transaction bumped it (set before COMMIT). */
  revision?: number;
}

/**
 * The connection with the schema's search_path among the server options. Options the URL
 * already gives (`?options=-c ...`) are kept: pg lets the URL's replace a config's, so the
 * two are joined in the URL.
 */
export function withSearchPath(url: string, schema: string): pg.ClientConfig {
  const searchPath = `-c search_path="${schema}"`;
  const parsed = URL.canParse(url) ? new URL(url) : null;
  const given = parsed?.searchParams.get('options');
  if (!parsed || !given) return { connectionString: url, options: searchPath };
  parsed.searchParams.set('options', `${given} ${searchPath}`);
  return { connectionString: parsed.href };
}

/** Applies pending migrations under an advisory lock, so replicas starting together take turns. */
export async function migratePostgres(
  client: pg.ClientBase,
  schema: string | undefined,
  migrations: readonly Migration[] = postgresMigrations,
): Promise<number[]> {
  const lockKey = `guardctl:migrations:${schema ?? ''}`;
  await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey]);
  const done: number[] = [];
  try {
    if (schema) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    for (const migration of inVersionOrder(migrations)) {
      if (applied.has(migration.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
      done.push(migration.version);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]).catch(() => undefined);
  }
  return done;
}

export class PostgresDatabase {
  readonly pruneBatchSize: number;
  readonly insertBatchSize: number;

  private constructor(
    readonly pool: pg.Pool,
    /** How the pool's clients connect; the change listener opens its own session with it. */
    readonly clientConfig: pg.ClientConfig,
    options: PostgresStoreOptions,
  ) {
    this.pruneBatchSize = options.pruneBatchSize ?? 10_000;
    this.insertBatchSize = options.insertBatchSize ?? 5_000;
  }

  /** Connects and migrates under the advisory lock. */
  static async open(url: string, options: PostgresStoreOptions): Promise<PostgresDatabase> {
    const schema = options.schema;
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
      throw new TypeError(`schema must be a plain identifier (letters, digits, _): ${schema}`);
    }
    const clientConfig: pg.ClientConfig = {
      // Every session sees only this store's schema, so queries need no qualified names.
      ...(schema ? withSearchPath(url, schema) : { connectionString: url }),
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
    };
    const pool = new pg.Pool({
      ...clientConfig,
      statement_timeout: options.statementTimeoutMs ?? 10_000,
      query_timeout: options.queryTimeoutMs ?? 15_000,
      max: options.maxConnections ?? 10,
      idleTimeoutMillis: options.idleTimeoutMs ?? 10_000,
      application_name: 'guardctl',
    });
    // An idle client losing its connection must not crash the process; the next query reports it.
    pool.on('error', () => undefined);
    try {
      // Migrations run without the request timeouts: rebuilding a large table may take
      // longer than any request should, and replicas wait their turn on the lock.
      const client = new pg.Client({ ...clientConfig, application_name: 'guardctl-migrate' });
      await client.connect();
      try {
        await migratePostgres(client, schema);
      } finally {
        await client.end().catch(() => undefined);
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw mapPgError(error);
    }
    return new PostgresDatabase(pool, clientConfig, options);
  }

  async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    try {
      return (await this.pool.query<R>(sql, params)).rows;
    } catch (error) {
      throw mapPgError(error);
    }
  }

  /**
   * The database server's clock as its answer arrives, in ms since the epoch (src/clock.ts):
   * read halfway through the query's round trip, timed on a connection already taken from
   * the pool. A wait for one (seconds, when the pool is busy) timed with the query would be
   * taken for a long round trip, half of it for the way back, and set the replica's clock
   * ahead by half the wait, so that its prune deleted sessions that long before their TTL.
   * The clock is read CLOCK_READINGS times and the reading of the shortest round trip kept:
   * an answer that waited in the socket while the event loop was busy (a long synchronous
   * evaluation, a pause) looks like a long round trip, half of it on the way back, and
   * set the replica's clock behind by half the wait, so that its steps wrote last-seen
   * times that old and another replica pruned their sessions that long before their TTL.
   * The readings after one that waited are sent once the loop is free again.
   */
  async databaseTime(): Promise<number> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw mapPgError(error);
    }
    let broken = false;
    // A connection lost while the client is checked out is reported on it (see write).
    const onLost = (): void => {
      broken = true;
    };
    client.on('error', onLost);
    try {
      let best: { at: number; roundTrip: number; arrived: number } | undefined;
      for (let i = 0; i < CLOCK_READINGS; i++) {
        const sent = performance.now();
        const { rows } = await client.query<{ ms: string }>('SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms');
        const arrived = performance.now();
        if (best === undefined || arrived - sent < best.roundTrip) best = { at: Number(rows[0]!.ms), roundTrip: arrived - sent, arrived };
      }
      // The best reading, moved on by the time since its answer arrived.
      return best!.at + best!.roundTrip / 2 + (performance.now() - best!.arrived);
    } catch (error) {
      broken = true;
      throw mapPgError(error);
    } finally {
      client.off('error', onLost);
      client.release(broken);
    }
  }

  /**
   * A statement prepared once per pool connection under `name` (parsed and planned once,
   * not on every call): for the statements the hot path sends back to back.
   */
  async prepared<R extends pg.QueryResultRow>(name: string, sql: string, params: unknown[]): Promise<R[]> {
    try {
      return (await this.pool.query<R>({ name, text: sql, values: params })).rows;
    } catch (error) {
      throw mapPgError(error);
    }
  }

  /** A query on the transaction's client (errors are mapped when the transaction fails). */
  async rows<R extends pg.QueryResultRow>(tx: WriteTx, sql: string, params: unknown[] = []): Promise<R[]> {
    return (await tx.client.query<R>(sql, params)).rows;
  }

  /**
   * Runs `fn` in one transaction on one client. When it changed controls, agents or
   * links, the revision grows, the history entries are stored under it (stamped with
   * `origin`) and NOTIFY is queued before COMMIT (delivered on commit).
   */
  async write<T>(fn: (tx: WriteTx) => Promise<T>, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw mapPgError(error);
    }
    const tx: WriteTx = { client, changed: false, agents: new Set(), entries: [] };
    let broken = false;
    // A connection that drops between this transaction's queries emits 'error' on the
    // checked-out client, which the pool listens for only while the client is idle: without
    // a listener here that error would be uncaught and end the process.
    const onLost = (): void => {
      broken = true;
    };
    client.on('error', onLost);
    try {
      await client.query('BEGIN');
      const value = await fn(tx);
      if (tx.changed) {
        const bumped = await client.query<{ value: string }>('UPDATE store_revision SET value = value + 1 WHERE id = 1 RETURNING value');
        const revision = Number(bumped.rows[0]?.value);
        tx.revision = revision;
        await insertEntries(client, revision, origin, tx.entries);
        let agents: string[] | '*' = uniqueSorted(tx.agents);
        if (JSON.stringify(agents).length > MAX_NOTIFY_PAYLOAD) agents = '*';
        await client.query('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, JSON.stringify({ revision, agents })]);
      }
      await client.query('COMMIT');
      return value;
    } catch (error) {
      // A query that timed out on the client's clock still runs on its connection: a
      // ROLLBACK would only queue behind it. Such a connection is discarded instead.
      if (isClientTimeout(error)) broken = true;
      else {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
      }
      throw mapPgError(error);
    } finally {
      // A client whose ROLLBACK failed is in an unknown state; destroy it instead of reusing it.
      client.off('error', onLost);
      client.release(broken);
    }
  }

  /**
   * Runs a `DELETE ... WHERE id IN (SELECT id ... LIMIT $2) RETURNING 1` statement, given
   * as its CTE, until a batch deletes fewer than `pruneBatchSize` rows. Batches keep each
   * transaction (and the locks and WAL it holds) small.
   */
  async pruneInBatches(deleteReturning: string, cutoff: string): Promise<number> {
    let deleted = 0;
    for (;;) {
      const rows = await this.query<{ n: string }>(`WITH gone AS (${deleteReturning}) SELECT count(*) AS n FROM gone`, [
        cutoff,
        this.pruneBatchSize,
      ]);
      const n = Number(rows[0]?.n ?? 0);
      deleted += n;
      if (n < this.pruneBatchSize) return deleted;
    }
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}
