/**
 * The bypass corpus's premise, checked against a real PostgreSQL: the hidden statements the
 * sql evaluator now matches do run there (DO blocks, function bodies, EXECUTE of constant
 * strings drop the table; a CTE named like a table does not protect it from DELETE; the
 * constant WHERE clauses it counts as none delete every row), and the near misses do not.
 * Each text runs in a transaction that is rolled back, in a fresh schema.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../../src/evaluators/registry.js';
import { loadSqlParser } from '../../../src/evaluators/sql/parser.js';
import type { CompiledCheck } from '../../../src/evaluators/types.js';
import { createSchema, dropSchemas, pgSuiteTitle, pgUnreachable, pgUrl } from '../../replicas/pg.js';

const unreachable = await pgUnreachable();
await loadSqlParser();
const registry = createDefaultRegistry();
function checkOf(config: Record<string, unknown>): CompiledCheck {
  const compiled = registry.compile('sql', config);
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.issues));
  return compiled.compiled.check;
}
const DESTRUCTIVE = checkOf({ blocked_operations: ['drop', 'truncate', 'alter', 'grant', 'revoke'] });
const WHERE = checkOf({ require_where: ['delete', 'update'] });
const PAYMENTS = checkOf({ blocked_tables: ['payments'] });

const DROPS_USERS = [
  'DO $$ BEGIN DROP TABLE users; END $$',
  'CREATE FUNCTION f() RETURNS void AS $$ DROP TABLE users $$ LANGUAGE sql; SELECT f()',
  "DO $$ BEGIN EXECUTE 'DR' || 'OP TABLE users'; END $$",
  "DO $$ BEGIN EXECUTE E'\\x44ROP TABLE users'; END $$",
  'CREATE PROCEDURE p() LANGUAGE plpgsql AS $$ BEGIN DROP TABLE users; END $$; CALL p()',
  "CREATE FUNCTION f() RETURNS void LANGUAGE sql AS 'DR'\n'OP TABLE users'; SELECT f()",
  "DO $a$ BEGIN EXECUTE $q$DO $b$ BEGIN DROP TABLE users; END $b$$q$; END $a$",
];
const KEEPS_USERS = ["SELECT 'DO $$ BEGIN DROP TABLE users; END $$'", "DO $$ BEGIN RAISE NOTICE 'drop table users'; END $$"];
const DELETES_ALL = ['2 > 1', '1 IN (1)', "'a' = 'a'", 'NOT false', '1 = 1 OR id = 2', 'true', 'id = id', '0.1 + 0.2 = 0.3', '1 = 1.0', '3 BETWEEN 1 AND 5', 'id >= id'];
const DELETES_SOME = ['id = 1', '1 = 2', 'false', 'NULL', 'id > id', '1 = 1 AND id = 2'];

describe.skipIf(unreachable !== null && process.env.GUARD_REQUIRE_PG !== '1')(pgSuiteTitle('sql evaluator against PostgreSQL', unreachable), () => {
  const created: string[] = [];
  let client: pg.Client;
  beforeAll(async () => {
    const schema = await createSchema(created);
    client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    await client.query(`SET search_path TO "${schema}"`);
    await client.query('CREATE TABLE users (id int); CREATE TABLE payments (id int); INSERT INTO payments VALUES (1), (2), (3)');
  });
  afterAll(async () => {
    await client.end();
    await dropSchemas(created);
  });

  /** Runs `text` in a transaction, answers `probe` before rolling back. */
  async function effectOf<T>(text: string, probe: () => Promise<T>): Promise<T> {
    await client.query('BEGIN');
    try {
      await client.query(text);
      return await probe();
    } finally {
      await client.query('ROLLBACK');
    }
  }
  const usersExists = async () => (await client.query<{ t: string | null }>("SELECT to_regclass('users')::text AS t")).rows[0]!.t !== null;
  const paymentsLeft = async () => Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM payments')).rows[0]!.n);

  it.each(DROPS_USERS)('PostgreSQL drops the table, and the evaluator matches: %s', async (text) => {
    expect(await effectOf(text, usersExists)).toBe(false);
    expect((await DESTRUCTIVE(text)).matched).toBe(true);
  });

  it.each(KEEPS_USERS)('PostgreSQL keeps the table, and the evaluator allows: %s', async (text) => {
    expect(await effectOf(text, usersExists)).toBe(true);
    expect((await DESTRUCTIVE(text)).matched).toBe(false);
  });

  it.each(DELETES_ALL)('WHERE %s deletes every row, and counts as no WHERE', async (condition) => {
    const text = `DELETE FROM payments WHERE ${condition}`;
    expect(await effectOf(text, paymentsLeft)).toBe(0);
    expect((await WHERE(text)).matched).toBe(true);
  });

  it.each(DELETES_SOME)('WHERE %s leaves rows, and counts as a WHERE', async (condition) => {
    const text = `DELETE FROM payments WHERE ${condition}`;
    expect(await effectOf(text, paymentsLeft)).toBeGreaterThan(0);
    expect((await WHERE(text)).matched).toBe(false);
  });

  it('a CTE named like the table does not protect it from DELETE, and the table is matched', async () => {
    const text = 'WITH payments AS (SELECT 1 AS id) DELETE FROM payments WHERE id = 1';
    expect(await effectOf(text, paymentsLeft)).toBe(2);
    expect((await PAYMENTS(text)).matched).toBe(true);
  });
});
