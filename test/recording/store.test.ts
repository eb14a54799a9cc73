/**
 * The recorded-steps part of the Store contract, on SQLite and (when reachable) PostgreSQL,
 * each PostgreSQL run in its own schema.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { NewRecordedStep, Store } from '../../src/store/types.js';
import { TEST_POOL, dropSchemas, pgRequired, pgSuiteTitle, pgUnreachable, pgUrl, skipReasonOf } from '../replicas/pg.js';

const schemas: string[] = [];
// Unreachable and not required: the PostgreSQL contract is skipped, with the reason shown.
const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));
const hasPg = unreachable === null || pgRequired;

afterAll(async () => {
  if (unreachable === null) await dropSchemas(schemas);
});

const row = (i: number, overrides: Partial<NewRecordedStep> = {}): NewRecordedStep => ({
  timestamp: new Date(Date.parse('2030-01-01T00:00:00Z') + i * 60_000).toISOString(),
  agent_name: i % 2 === 0 ? 'even' : 'odd',
  stage: 'pre',
  step_json: JSON.stringify({ type: 'tool', name: 't', input: { i } }),
  decision: 'allow',
  ...overrides,
});

function contract(name: string, open: () => Promise<Store>) {
  describe(`recorded steps on ${name}`, () => {
    it('pages oldest first with a cursor, filters by agent and time, and prunes by age', async () => {
      const store = await open();
      try {
        await store.insertRecordedSteps(Array.from({ length: 10 }, (_, i) => row(i)));
        const first = await store.queryRecordedSteps({ limit: 4 });
        expect(first.steps.map((s) => (s.step as { input: { i: number } }).input.i)).toEqual([0, 1, 2, 3]);
        expect(first.next_cursor).toBe(first.steps[3]!.id);
        const rest: number[] = [];
        let cursor = first.next_cursor;
        while (cursor !== null) {
          const page = await store.queryRecordedSteps({ limit: 4, cursor });
          rest.push(...page.steps.map((s) => (s.step as { input: { i: number } }).input.i));
          cursor = page.next_cursor;
        }
        expect(rest).toEqual([4, 5, 6, 7, 8, 9]);

        const odd = await store.queryRecordedSteps({ limit: 100, agent_name: 'odd', since: row(5).timestamp });
        expect(odd.steps.map((s) => (s.step as { input: { i: number } }).input.i)).toEqual([5, 7, 9]);
        expect(odd.steps[0]).toMatchObject({ agent_name: 'odd', stage: 'pre', decision: 'allow', timestamp: row(5).timestamp });
        expect(odd.next_cursor).toBeNull();

        expect(await store.pruneRecordedSteps(row(3).timestamp)).toBe(3);
        expect((await store.queryRecordedSteps({ limit: 100 })).steps).toHaveLength(7);
      } finally {
        await store.close();
      }
    });
  });
}

contract('sqlite :memory:', async () => new SqliteStore(':memory:'));
describe.skipIf(!hasPg)(pgSuiteTitle('PostgreSQL', unreachable), () => {
  contract('postgres', async () => {
    const schema = `guard_rec_${randomBytes(6).toString('hex')}`;
    schemas.push(schema);
    return PostgresStore.open(pgUrl, { ...TEST_POOL, schema });
  });
});
