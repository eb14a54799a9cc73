/**
 * A database made by the previous version (guardctl 960ab2d, migrations 1 to 3: see
 * test/fixtures/upgrade/README.md) opened by today's stores: it upgrades in place, loses
 * nothing, and gains history (one entry per existing control), modes and set revisions.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migratePostgres } from '../../src/store/postgres/database.js';
import { postgresMigrations } from '../../src/store/postgres/migrations.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/types.js';
import { TEST_POOL, createSchema, dropSchemas, pgRequired, pgUnreachable, pgUrl, skipReasonOf } from '../replicas/pg.js';

const fixtures = fileURLToPath(new URL('../fixtures/upgrade/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'guardctl-upgrade-'));
const schemas: string[] = [];
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropSchemas(schemas);
});

/** What the fixture holds (make-fixture.mjs), checked through today's store. */
async function expectNothingLost(store: Store): Promise<void> {
  const controls = await store.listAllControls();
  expect(controls.map((c) => [c.control_id, c.name, c.enabled, c.managed_by, c.source])).toEqual([
    [1, 'hand-made', true, null, null],
    [2, 'gitops-owned', true, 'gitops:default', 'controls/sql.yaml:3'],
    [3, 'disabled-one', false, null, null],
    [4, 'no-data-yet', true, null, null],
  ]);
  expect(controls[0]!.data).toMatchObject({ evaluator: { config: { pattern: '(?i)drop\\s+table' } }, action: { decision: 'deny', metadata: { severity: 'high' } } });
  // Data stored before modes existed reads as enforced (no mode key at all).
  expect(controls[0]!.data?.mode).toBeUndefined();
  expect((await store.listAgentControls('support-bot')).map((c) => c.name)).toEqual(['hand-made', 'gitops-owned']);
  expect((await store.getAgent('support-bot'))?.steps).toEqual([{ type: 'tool', name: 'run_sql' }]);
  expect(await store.revision()).toBe(7);
  const events = await store.queryEvents({ limit: 10, offset: 0 });
  expect(events.total).toBe(3);
  expect(events.events.every((e) => e.mode === 'enforce' && e.set_revision === null)).toBe(true);
  const stats = await store.controlStats({ since: '2025-12-31T00:00:00.000Z' });
  expect(stats.map((r) => [r.control_id, r.executions, r.matches, r.non_matches, r.errors, r.shadow_executions])).toEqual([
    [1, 42, 1, 41, 0, 0],
    [2, 2, 1, 0, 1, 0],
  ]);
  expect((await store.queryRecordedSteps({ limit: 10 })).steps).toHaveLength(1);

  // Each existing control starts its history with what it is now.
  const audit = await store.auditLog({ limit: 100 });
  expect(audit.entries.map((e) => [e.control_id, e.op, e.actor, e.source, e.revision])).toEqual([
    [4, 'create', 'upgrade', 'api', 7],
    [3, 'create', 'upgrade', 'api', 7],
    [2, 'create', 'upgrade', 'apply', 7],
    [1, 'create', 'upgrade', 'api', 7],
  ]);
  for (const c of controls) {
    const [entry] = (await store.controlHistory(c.control_id, { limit: 1 })).entries;
    expect(entry?.after).toEqual({ name: c.name, enabled: c.enabled, data: c.data, managed_by: c.managed_by, source: c.source });
  }

  // And it keeps working: a write is history, restore returns to the upgraded state.
  await store.updateControl(1, { data: { ...controls[0]!.data!, mode: 'shadow' } }, { actor: 'admin:aa', source: 'api' });
  expect((await store.controlHistory(1, { limit: 1 })).entries[0]).toMatchObject({ op: 'update', revision: 8 });
  expect(await store.restoreControl(1, 7, { actor: 'admin:aa', source: 'api' })).toMatchObject({ ok: true, changed: true });
  expect((await store.getControl(1))?.data).toEqual(controls[0]!.data);
  await store.insertRollups([
    { bucket: new Date().toISOString(), agent_name: 'support-bot', control_id: 1, control_name: 'hand-made', check_stage: 'pre', applies_to: 'tool', evaluator_name: 'regex', mode: 'shadow', count: 2, total_duration_ms: 0 },
  ]);
  const [row] = await store.controlStats({ since: new Date(Date.now() - 60_000).toISOString(), control_id: 1 });
  expect(row).toMatchObject({ shadow_executions: 2, non_matches: 2 });
}

describe('upgrading a SQLite file made by the previous version', () => {
  it('migrates in place with nothing lost, once', async () => {
    const file = join(dir, 'old.sqlite');
    copyFileSync(join(fixtures, '960ab2d.sqlite'), file);
    const before = new Database(file, { readonly: true });
    expect(before.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).toBe(3);
    before.close();

    const store = new SqliteStore(file);
    try {
      await expectNothingLost(store);
    } finally {
      await store.close();
    }
    // Opening again applies nothing twice.
    const again = new SqliteStore(file);
    expect((await again.auditLog({ limit: 100 })).entries.filter((e) => e.actor === 'upgrade')).toHaveLength(4);
    await again.close();
  });
});

const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));

describe.skipIf(unreachable !== null && !pgRequired)('upgrading a PostgreSQL schema made by the previous version', () => {
  it('migrates in place with nothing lost', async () => {
    const schema = await createSchema(schemas);
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      await client.query(`SET search_path = "${schema}"`);
      await client.query(readFileSync(join(fixtures, '960ab2d.pg.sql'), 'utf8').replaceAll('__SCHEMA__', `"${schema}"`));
      const { rows } = await client.query<{ v: number }>('SELECT max(version) AS v FROM schema_migrations');
      expect(rows[0]?.v).toBe(3);
    } finally {
      await client.end();
    }
    const store = await PostgresStore.open(pgUrl, { ...TEST_POOL, schema });
    try {
      await expectNothingLost(store);
    } finally {
      await store.close();
    }
  });

  it('takes counters counted by the first counter_take_leased (04c01cb) on, their steps kept and the window fixed', async () => {
    const schema = await createSchema(schemas);
    // A minute's window: buckets of one second; the step is in bucket k.
    const start = Date.UTC(2026, 0, 1, 12, 0, 0);
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    try {
      await client.query(`SET search_path = "${schema}"`);
      await migratePostgres(client, schema, postgresMigrations.filter((m) => m.version <= 5));
      await client.query(readFileSync(join(fixtures, '04c01cb-counters.pg.sql'), 'utf8'));
      await client.query(`INSERT INTO schema_migrations (version, name) VALUES (6, 'counters: the steps of one key counted in one statement, with leases')`);
      const { rows } = await client.query<{ used: number[] }>(
        `SELECT used FROM counter_take_leased('1', 'ann', 1, 'rate', 60000, ARRAY[$1]::float8[], ARRAY[1]::float8[], ARRAY[10]::float8[], ARRAY[true],
          true, ARRAY[false], ARRAY[0]::float8[], ARRAY[0]::float8[], ARRAY[0]::bigint[], ARRAY[0]::float8[], 0)`,
        [start + 500],
      );
      expect(rows[0]!.used).toEqual([1]);
    } finally {
      await client.end();
    }
    const store = await PostgresStore.open(pgUrl, { ...TEST_POOL, schema });
    try {
      const rate = { control_id: 1, counter: '1', key: 'ann', window_ms: 60_000, amount: 1, max: 10, always: true, kind: 'rate', consistency: 'exact' } as const;
      // 60 buckets later, just before the bucket's end: a lease that ends in the next bucket.
      const late = start + 60_950;
      const leased = await store.sharedCounters.countShared(rate, late, true, { defer: true, release: null, ask: 64, leaseMs: 100 });
      expect(leased).toMatchObject({ used: 2, granted: 2, leaseBucket: start / 1000 + 61 });
      // The step counted before the upgrade is still in the window: 1 + 1 + 2 leased + 6.
      expect(await store.sharedCounters.countShared({ ...rate, amount: 6 }, late, true)).toEqual({ used: 10, over: false });
    } finally {
      await store.close();
    }
  });
});
