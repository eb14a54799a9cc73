/**
 * The contract on a real PostgreSQL. Each test gets its own schema (dropped afterwards),
 * so parallel runs never meet. Without a reachable server the suite is skipped with the
 * reason shown, unless GUARD_REQUIRE_PG=1 (CI), where it fails instead.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { postgresMigrations } from '../../src/store/postgres/migrations.js';
import { PostgresDatabase, withSearchPath } from '../../src/store/postgres/database.js';
import type { ChangeInfo } from '../../src/store/types.js';
import { StoreError } from '../../src/store/types.js';
import { TEST_POOL, dropSchemas, pgRequired as required, pgUnreachable, pgUrl as url, skipReasonOf } from '../replicas/pg.js';
import { controlData, defineStoreContract } from './store-contract.js';
import { defineHistoryContract } from './history-contract.js';
import { defineApprovalContract } from './approval-contract.js';
import { definePolicyContract } from './policy-contract.js';

const unreachable = await pgUnreachable();
const skipReason = skipReasonOf(unreachable);
if (unreachable && !required) console.warn(skipReason);

const schemas: string[] = [];
function freshSchema(): string {
  const schema = `guard_test_${randomBytes(6).toString('hex')}`;
  schemas.push(schema);
  return schema;
}

afterAll(async () => {
  if (!unreachable) await dropSchemas(schemas);
});

describe('PostgreSQL availability', () => {
  it('maps an unreachable server to StoreError unavailable', async () => {
    const error = await PostgresStore.open('postgres://postgres@127.0.0.1:1/none', { ...TEST_POOL, connectionTimeoutMs: 1000 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).kind).toBe('unavailable');
  });

  it.runIf(required)('is reachable when GUARD_REQUIRE_PG=1', () => {
    expect(unreachable, `GUARD_REQUIRE_PG=1 but ${url} is unreachable`).toBeNull();
  });
});

describe.skipIf(unreachable !== null)(unreachable ? skipReason : 'PostgreSQL store', () => {
  defineStoreContract('postgres', () => PostgresStore.open(url, { ...TEST_POOL, schema: freshSchema() }));
  defineHistoryContract('postgres', () => PostgresStore.open(url, { ...TEST_POOL, schema: freshSchema() }));
  {
    const schemaOf = new WeakMap<object, string>();
    defineApprovalContract(
      'postgres',
      async () => {
        const schema = freshSchema();
        const store = await PostgresStore.open(url, { ...TEST_POOL, schema });
        schemaOf.set(store, schema);
        return store;
      },
      // A second pool on the same schema: another replica.
      async (store) => PostgresStore.open(url, { ...TEST_POOL, schema: schemaOf.get(store)! }),
    );
  }
  definePolicyContract('postgres', () => PostgresStore.open(url, { ...TEST_POOL, schema: freshSchema() }));

  function collect(store: PostgresStore): ChangeInfo[] {
    const seen: ChangeInfo[] = [];
    store.onChange((info) => seen.push(info));
    return seen;
  }

  it('migrates once when two stores open one schema at the same time', async () => {
    const schema = freshSchema();
    const [a, b, c] = await Promise.all([
      PostgresStore.open(url, { ...TEST_POOL, schema }),
      PostgresStore.open(url, { ...TEST_POOL, schema }),
      PostgresStore.open(url, { ...TEST_POOL, schema }),
    ]);
    await a.createControl({ name: 'shared' });
    expect((await b.getControlByName('shared'))?.name).toBe('shared');
    await Promise.all([a.close(), b.close(), c.close()]);

    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`);
    await client.end();
    expect(rows).toEqual(postgresMigrations.map((m) => ({ version: m.version })));
  });

  it('keeps the server options a database URL gives beside its schema', async () => {
    const schema = freshSchema();
    const withOptions = new URL(url);
    withOptions.searchParams.set('options', `${withOptions.searchParams.get('options') ?? ''} -c work_mem=1234kB`.trim());
    const database = await PostgresDatabase.open(withOptions.href, { schema });
    try {
      expect(await database.query('SHOW work_mem')).toEqual([{ work_mem: '1234kB' }]);
      expect(await database.query('SELECT current_schema() AS schema')).toEqual([{ schema }]);
    } finally {
      await database.close();
    }
  });

  it('the database itself refuses deleting a control a policy binds (migration 13); a policy delete still cascades', async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(url, { ...TEST_POOL, schema });
    await store.createControl({ name: 'bound' });
    await store.createPolicy({ name: 'p', controls: ['bound'], agents: { match_labels: {} } });
    await store.close();
    const client = new pg.Client(withSearchPath(url, schema));
    await client.connect();
    try {
      const refused = await client.query(`DELETE FROM controls WHERE name = 'bound'`).catch((e: unknown) => e);
      expect((refused as { code?: string }).code).toBe('23503');
      await client.query(`DELETE FROM policies WHERE name = 'p'`);
      expect((await client.query(`DELETE FROM controls WHERE name = 'bound'`)).rowCount).toBe(1);
    } finally {
      await client.end();
    }
  });

  it('delivers NOTIFY of a committed write to a second store, with the touched agents', async () => {
    const schema = freshSchema();
    const writer = await PostgresStore.open(url, { ...TEST_POOL, schema });
    const reader = await PostgresStore.open(url, { ...TEST_POOL, schema });
    try {
      const seen = collect(reader);
      await reader.listening();
      const agent = `agent-${schema}`;
      await writer.upsertAgent({ agent_name: agent });
      await expect.poll(() => seen.some((s) => s.agents?.includes(agent)), { interval: 25, message: 'the upsert notification' }).toBe(true);

      const c = await writer.createControl({ name: 'c', data: controlData() });
      await writer.linkControl(agent, c.control_id);
      seen.length = 0;
      await writer.updateControl(c.control_id, { enabled: false });
      await expect.poll(() => seen.some((s) => s.agents?.includes(agent)), { interval: 25, message: 'the linked control update notification' }).toBe(true);

      // A rolled-back batch sends nothing: its NOTIFY was inside the transaction.
      const marker = `rolled-back-${schema}`;
      seen.length = 0;
      await expect(
        writer.applyChanges([
          { op: 'upsert_agent', agent: { agent_name: marker } },
          { op: 'link', agent_name: marker, control_name: 'missing' },
        ]),
      ).rejects.toBeInstanceOf(StoreError);
      await writer.upsertAgent({ agent_name: `after-${schema}` });
      await expect.poll(() => seen.some((s) => s.agents?.includes(`after-${schema}`)), { interval: 25, message: 'the later notification' }).toBe(true);
      expect(seen.some((s) => s.agents?.includes(marker))).toBe(false);
    } finally {
      await writer.close();
      await reader.close();
    }
  });

  it('reconnects the listener after its connection drops and says "anything changed"', async () => {
    const schema = freshSchema();
    const writer = await PostgresStore.open(url, { ...TEST_POOL, schema });
    const reader = await PostgresStore.open(url, { ...TEST_POOL, schema, listenerRetryMs: 50 });
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const seen = collect(reader);
      await reader.listening();
      const pid = reader.listenerBackendPid();
      expect(pid).not.toBeNull();
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
      await expect.poll(() => seen.some((s) => s.agents === null), { interval: 25, message: 'the reconnect notice' }).toBe(true);
      await expect.poll(() => reader.listenerBackendPid() !== null && reader.listenerBackendPid() !== pid, { interval: 25, message: 'a new session' }).toBe(true);

      const agent = `back-${schema}`;
      await writer.upsertAgent({ agent_name: agent });
      await expect.poll(() => seen.some((s) => s.agents?.includes(agent)), { interval: 25, message: 'a notification after reconnecting' }).toBe(true);
    } finally {
      await admin.end();
      await writer.close();
      await reader.close();
    }
  });

  it('answers the stats query from the covering indexes', async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open(url, { ...TEST_POOL, schema });
    const client = new pg.Client(withSearchPath(url, schema));
    await client.connect();
    try {
      await client.query('SET enable_seqscan = off');
      const { rows } = await client.query(
        `EXPLAIN SELECT control_id, outcome, action, count(*), sum(execution_duration_ms) FROM events
         WHERE ts >= now() - interval '1 day' AND agent_name = 'a' GROUP BY control_id, outcome, action`,
      );
      expect(rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n')).toContain('events_agent_ts');
    } finally {
      await client.end();
      await store.close();
    }
  });
});
