/**
 * PostgreSQL for the store contract, replica and outage tests: the server named by
 * GUARD_TEST_PG_URL, one fresh schema per test (dropped afterwards) so parallel runs never
 * meet. Unreachable, the suites skip with the reason shown, unless GUARD_REQUIRE_PG=1 (CI),
 * where they fail.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll } from 'vitest';
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
      const store = await PostgresStore.open(pgUrl, { schema: name });
      stores.push(store);
      return store;
    },
    lastSchema: () => schemas[schemas.length - 1]!,
  };
}

/**
 * A query counting the backends waiting for a lock in a statement like `query` (a LIKE
 * pattern). Ask it on a connection of its own, outside a transaction: one transaction
 * sees one snapshot of pg_stat_activity.
 */
export function lockWaits(query: string): { text: string; values: string[] } {
  return { text: "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1", values: [query] };
}
