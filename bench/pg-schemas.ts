/**
 * PostgreSQL for the benchmarks: each server gets a fresh schema on the test database
 * (GUARD_TEST_PG_URL), dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_URL = process.env.GUARD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A one-off connection as the database's owner. */
export async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Creates a schema, remembers it in `schemas` and answers a database URL whose search path is it. */
export async function freshSchema(schemas: string[], prefix = 'guard_bench'): Promise<string> {
  const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
  schemas.push(schema);
  await withAdmin((c) => c.query(`CREATE SCHEMA "${schema}"`));
  const url = new URL(PG_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** Drops every schema `freshSchema` made (and empties the list). */
export async function dropSchemas(schemas: string[]): Promise<void> {
  await withAdmin(async (c) => {
    for (const s of schemas.splice(0)) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  });
}

export const pgReachable = (): Promise<boolean> => withAdmin(async () => true).catch(() => false);
