/**
 * PostgreSQL for the store contract, replica and outage tests: the server named by
 * GUARD_TEST_PG_URL, one fresh schema per test (dropped afterwards) so parallel runs never
 * meet. Unreachable, the suites skip with the reason shown, unless GUARD_REQUIRE_PG=1 (CI),
 * where they fail.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, expect } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';

/**
 * The test database, its commits not waiting for the disk (`synchronous_commit=off`, a
 * setting of the session alone): the tests commit thousands of small transactions and
 * never test a crash of the database server, and on a slow disk each flush took several
 * milliseconds. A URL that sets its own server options keeps them.
 */
export const pgUrl = withoutCommitWait(pgUrlAsGiven());

/** GUARD_TEST_PG_URL as given: for a test of the server's own default settings. */
export function pgUrlAsGiven(): string {
  return process.env.GUARD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
}

function withoutCommitWait(url: string): string {
  if (!URL.canParse(url)) return url;
  const parsed = new URL(url);
  if (parsed.searchParams.has('options')) return url;
  parsed.searchParams.set('options', '-c synchronous_commit=off');
  return parsed.href;
}
export const pgRequired = process.env.GUARD_REQUIRE_PG === '1';

/**
 * The query pool of a store a test opens (GUARD_PG_POOL_SIZE for an app): the workers'
 * tests, each with its replicas, share the database's 100 connections, and a file's stores
 * stay open until its last test. Five still let concurrent steps race, and leave a step
 * a connection while the session cache's pings and clock reads hold others on a loaded
 * machine (with three, a step waited past a test's 10 s poll).
 */
export const TEST_POOL_SIZE = 5;
export const TEST_POOL = { maxConnections: TEST_POOL_SIZE } as const;

/** null when reachable, else why not. */
export async function pgUnreachable(): Promise<string | null> {
  const client = new pg.Client({ connectionString: pgUrl, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export function skipReasonOf(unreachable: string | null): string {
  return `PostgreSQL tests skipped: ${pgUrl} is unreachable (${unreachable}); set GUARD_TEST_PG_URL, or GUARD_REQUIRE_PG=1 to fail instead`;
}

/**
 * The title of a suite that needs PostgreSQL: the skip reason when it is skipped (unreachable
 * and not required), else `title`. With GUARD_REQUIRE_PG=1 an unreachable database makes the
 * suite run and fail, under its own title rather than one saying it was skipped.
 */
export function pgSuiteTitle(title: string, unreachable: string | null): string {
  return unreachable !== null && !pgRequired ? skipReasonOf(unreachable) : title;
}

/** Creates a fresh schema and returns its name; `dropSchemas` removes them all. */
export async function createSchema(created: string[]): Promise<string> {
  const schema = `guard_rep_${randomBytes(6).toString('hex')}`;
  created.push(schema);
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA "${schema}"`);
  } finally {
    await client.end();
  }
  return schema;
}

export async function dropSchemas(created: string[]): Promise<void> {
  if (created.length === 0) return;
  const client = new pg.Client({ connectionString: pgUrl });
  await client.connect();
  try {
    for (const schema of created.splice(0)) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/**
 * The database URL a server process uses for one schema: libpq's `options` parameter
 * sets the session's search_path, so every connection (pool and listener) sees it.
 * `port` swaps in a proxy's port.
 */
export function schemaUrl(schema: string, port?: number): string {
  const url = new URL(pgUrl);
  if (port !== undefined) {
    url.hostname = '127.0.0.1';
    url.port = String(port);
  }
  const given = url.searchParams.get('options');
  url.searchParams.set('options', `${given ? `${given} ` : ''}-c search_path=${schema}`);
  return url.toString();
}

export function pgTarget(): { host: string; port: number } {
  const url = new URL(pgUrl);
  return { host: url.hostname || '127.0.0.1', port: Number(url.port || 5432) };
}

/**
 * Stores on PostgreSQL for one test file: `open()` on a fresh schema (`prefix` and random
 * hex), `open(schema)` as another replica of that schema; every store is closed and every
 * fresh schema dropped after the file's tests.
 */
export function storeOpener(prefix: string, unreachable: string | null): {
  open(schema?: string): Promise<PostgresStore>;
  /** The schema opened last: `open(lastSchema())` is a second replica of it. */
  lastSchema(): string;
} {
  const schemas: string[] = [];
  const stores: PostgresStore[] = [];
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
    if (!unreachable) await dropSchemas(schemas);
  });
  return {
    async open(schema) {
      const name = schema ?? `${prefix}_${randomBytes(6).toString('hex')}`;
      if (schema === undefined) schemas.push(name);
      const store = await PostgresStore.open(pgUrl, { ...TEST_POOL, schema: name });
      stores.push(store);
      return store;
    },
    lastSchema: () => schemas[schemas.length - 1]!,
  };
}

/**
 * A query counting the backends waiting for a lock in a statement like `query` (a LIKE
 * pattern) on the asking connection's schema: backends that hold a lock on one of its
 * tables. Counted in the whole database, another test's statement of the same text,
 * waiting in its own schema at the same time, was counted too and the count never settled.
 * Ask it on a connection of its own, on the test's schema (schemaUrl), outside a
 * transaction: one transaction sees one snapshot of pg_stat_activity.
 */
export function lockWaits(query: string): { text: string; values: string[] } {
  return {
    text: `SELECT count(*)::int AS n FROM pg_stat_activity a WHERE a.wait_event_type = 'Lock' AND a.query LIKE $1
      AND EXISTS (SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE l.pid = a.pid AND c.relnamespace = current_schema()::regnamespace)`,
    values: [query],
  };
}

type Clients<N extends number, T extends pg.Client[] = []> = T['length'] extends N ? T : Clients<N, [...T, pg.Client]>;

/** `count` clients on `url`, connected: each its own backend, so each can hold a transaction open. */
export async function connectedClients<N extends number>(url: string, count: N): Promise<Clients<N>> {
  const clients = Array.from({ length: count }, () => new pg.Client({ connectionString: url }));
  await Promise.all(clients.map((c) => c.connect()));
  return clients as Clients<N>;
}

/** The server process behind a client: what pg_blocking_pids names. */
export async function backendPid(client: pg.Client): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
}

/** Whether backend `pid` waits for a lock backend `by` holds, read on `watcher` (outside a transaction). */
export async function isBlockedBy(watcher: pg.Client, pid: number, by: number): Promise<boolean> {
  return (await watcher.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND $2 = ANY(pg_blocking_pids(pid))', [pid, by])).rows[0]!.n === 1;
}

/**
 * Batches of one step per id of agent `bot`, begun with session_begin_steps (now 1000,
 * nothing expired, bound 100) on a client of their own, each answering 'ok' or its error;
 * `blockedOrDone` waits until the batch waits for `by`, or (once it waits for nothing there) has finished.
 */
export function stepBatches(watcher: pg.Client): {
  batch: (client: pg.Client, ids: string[]) => Promise<string>;
  blockedOrDone: (client: pg.Client, pid: number, by: number) => Promise<void>;
} {
  const done = new Set<pg.Client>();
  return {
    batch: (client, ids) =>
      client
        .query('SELECT * FROM session_begin_steps($1, $2, $3, 1000, 0, 100)', [ids.map(() => 'bot'), ids, ids.map(() => 1)])
        .then(
          () => 'ok',
          (e: Error) => e.message,
        )
        .finally(() => done.add(client)),
    blockedOrDone: async (client, pid, by) => {
      await expect.poll(async () => done.has(client) || (await isBlockedBy(watcher, pid, by))).toBe(true);
    },
  };
}
