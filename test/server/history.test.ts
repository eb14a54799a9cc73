/**
 * History, restore and audit through the REST API, on a real SQLite store and (when
 * reachable) a real PostgreSQL one: who wrote what through which path, read back by id,
 * restored, and refused where the file is the truth.
 */
import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { assembleServer, type AssembledServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/types.js';
import { TEST_POOL, createSchema, dropSchemas, pgRequired, pgUnreachable, pgUrl, skipReasonOf } from '../replicas/pg.js';
import { call, json, sqlControl, step } from './helpers.js';

const ADMIN = 'admin-key-for-history';
const REGULAR = 'regular-key-for-history';
const admin = { 'x-api-key': ADMIN };
const regular = { 'x-api-key': REGULAR };
const fingerprint = (key: string) => createHash('sha256').update(key).digest('hex').slice(0, 8);

const schemas: string[] = [];
afterAll(() => dropSchemas(schemas));
const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));

const stores: Array<[string, () => Promise<Store>, boolean]> = [
  ['sqlite', async () => new SqliteStore(':memory:'), true],
  ['postgres', async () => PostgresStore.open(pgUrl, { ...TEST_POOL, schema: await createSchema(schemas) }), unreachable === null || pgRequired],
];

describe.each(stores)('history, restore and audit over the API (%s)', (_name, open, enabled) => {
  let server: AssembledServer;
  beforeEach(async ({ skip }) => {
    if (!enabled) skip();
    const config = loadConfig({ OBSERVABILITY_ENABLED: 'true', GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: REGULAR, GUARD_ADMIN_API_KEYS: ADMIN });
    server = await assembleServer(config, { store: await open(), registry: createDefaultRegistry(), observability: { processMetrics: false, writerThread: false } });
  });
  afterEach(async () => {
    await server?.close();
  });

  const create = async (name: string, data: unknown = sqlControl(), extra: Record<string, unknown> = {}) => {
    const res = await call(server.app, 'PUT', '/api/v1/controls', { name, data, ...extra }, admin);
    expect(res.statusCode).toBe(201);
    return json(res).control_id as number;
  };
  const history = async (id: number, query = '', headers = regular) => call(server.app, 'GET', `/api/v1/controls/${id}/history${query}`, undefined, headers);

  it('lists a control’s revisions newest first with the key’s class and fingerprint, never the key', async () => {
    const id = await create('block-drop');
    await call(server.app, 'PUT', `/api/v1/controls/${id}/data`, { data: sqlControl({ mode: 'shadow' }) }, admin);
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'support-bot' }, regular);
    await call(server.app, 'POST', `/api/v1/agents/support-bot/controls/${id}`, undefined, admin);
    await call(server.app, 'PATCH', `/api/v1/controls/${id}`, { enabled: false }, admin);
    const res = await history(id);
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(ADMIN);
    const body = json(res);
    expect(body.control_id).toBe(id);
    expect(body.entries.map((e: { op: string }) => e.op)).toEqual(['update', 'link', 'update', 'create']);
    expect(body.entries.every((e: { actor: string; source: string }) => e.actor === `admin:${fingerprint(ADMIN)}` && e.source === 'api')).toBe(true);
    expect(body.entries[2].before.data.mode).toBeUndefined();
    expect(body.entries[2].after.data.mode).toBe('shadow');
    expect(body.pagination).toEqual({ limit: 20, next_cursor: null, has_more: false });

    const page = json(await history(id, '?limit=3'));
    expect(page.pagination.has_more).toBe(true);
    const rest = json(await history(id, `?limit=3&cursor=${page.pagination.next_cursor}`));
    expect(rest.entries.map((e: { op: string }) => e.op)).toEqual(['create']);
    // A regular key may register agents: the audit log says so.
    const audit = json(await call(server.app, 'GET', '/api/v1/audit', undefined, admin));
    expect(audit.entries.find((e: { kind: string }) => e.kind === 'agent')).toMatchObject({ actor: `regular:${fingerprint(REGULAR)}`, agent_name: 'support-bot' });
  });

  it('marks writes through POST /changes as apply, and keeps a deleted control’s history by id', async () => {
    const changes = [
      { op: 'create_control', control: { name: 'applied', data: sqlControl(), managed_by: 'gitops:default', source: 'controls/sql.yaml:3' } },
    ];
    expect((await call(server.app, 'POST', '/api/v1/changes', { changes }, admin)).statusCode).toBe(200);
    const id = json(await call(server.app, 'GET', '/api/v1/controls?name=applied', undefined, regular)).controls[0].control_id as number;
    await call(server.app, 'POST', '/api/v1/changes', { changes: [{ op: 'delete_control', name: 'applied' }] }, admin);
    expect((await call(server.app, 'GET', `/api/v1/controls/${id}`, undefined, regular)).statusCode).toBe(404);
    const entries = json(await history(id)).entries;
    expect(entries.map((e: { op: string; source: string }) => [e.op, e.source])).toEqual([
      ['delete', 'apply'],
      ['create', 'apply'],
    ]);
    // An id that never named a control has no history.
    const missing = await history(id + 1000);
    expect(missing.statusCode).toBe(404);
    expect(json(missing).detail).toMatch(/none ever had/);
  });

  it('restores a hand-made control (admin), and evaluation follows at once', async () => {
    const id = await create('block-drop');
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'support-bot' }, admin);
    await call(server.app, 'POST', `/api/v1/agents/support-bot/controls/${id}`, undefined, admin);
    const first = json(await history(id)).entries.at(-1).revision as number;
    // Loosened by hand: the control now watches a pattern that never matches.
    await call(server.app, 'PUT', `/api/v1/controls/${id}/data`, { data: sqlControl({ evaluator: { name: 'regex', config: { pattern: 'never-matches' } } }) }, admin);
    expect(json(await call(server.app, 'POST', '/api/v1/evaluation', step('DROP TABLE users'), regular)).decision).toBe('allow');

    expect((await call(server.app, 'POST', `/api/v1/controls/${id}/restore`, { revision: first }, regular)).statusCode).toBe(403);
    const restored = await call(server.app, 'POST', `/api/v1/controls/${id}/restore`, { revision: first }, admin);
    expect(restored.statusCode).toBe(200);
    expect(json(restored)).toMatchObject({ restored: true, recreated: false, revision: first, control: { control_id: id, name: 'block-drop' } });
    expect(json(await call(server.app, 'POST', '/api/v1/evaluation', step('DROP TABLE users'), regular)).decision).toBe('deny');
    expect(json(await history(id)).entries[0]).toMatchObject({ op: 'restore', note: `restored revision ${first}`, actor: `admin:${fingerprint(ADMIN)}` });
  });

  it('refuses restore with 404 for a revision the control does not have, 409 naming the file for managed controls, 422 for a bad body', async () => {
    const hand = await create('hand');
    const owned = await create('owned', sqlControl(), { managed_by: 'gitops:default', source: 'controls/sql.yaml:3' });
    const ownedRevision = json(await history(owned)).entries[0].revision as number;
    const handBefore = json(await call(server.app, 'GET', `/api/v1/controls/${hand}`, undefined, regular));

    const missing = await call(server.app, 'POST', `/api/v1/controls/${hand}/restore`, { revision: ownedRevision + 1000 }, admin);
    expect(missing.statusCode).toBe(404);
    expect(json(missing).detail).toMatch(/has no revision \d+; GET \/api\/v1\/controls\/\d+\/history lists its revisions/);

    const managed = await call(server.app, 'POST', `/api/v1/controls/${owned}/restore`, { revision: ownedRevision }, admin);
    expect(managed.statusCode).toBe(409);
    expect(json(managed)).toMatchObject({ error_code: 'read_only' });
    expect(json(managed).detail).toBe(
      'control "owned" is managed by gitops:default (defined in controls/sql.yaml:3): revert the change to controls/sql.yaml in git; apply it again',
    );

    for (const body of [{}, { revision: -1 }, { revision: 'one' }, { revision: 1, extra: true }]) {
      const bad = await call(server.app, 'POST', `/api/v1/controls/${hand}/restore`, body, admin);
      expect(bad.statusCode).toBe(422);
      expect(json(bad).errors.length).toBeGreaterThan(0);
    }
    // Nothing changed by any refusal.
    expect(json(await call(server.app, 'GET', `/api/v1/controls/${hand}`, undefined, regular))).toEqual(handBefore);
    expect(json(await history(hand)).entries).toHaveLength(1);
  });

  it('lists every write in the audit log (admin only), filtered by actor and time', async () => {
    await create('a');
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' }, regular);
    expect((await call(server.app, 'GET', '/api/v1/audit', undefined, regular)).statusCode).toBe(403);
    const all = json(await call(server.app, 'GET', '/api/v1/audit?since=24h', undefined, admin));
    expect(all.entries.map((e: { kind: string; op: string }) => `${e.kind} ${e.op}`)).toEqual(['agent create', 'control create']);
    const mine = json(await call(server.app, 'GET', `/api/v1/audit?actor=regular:${fingerprint(REGULAR)}`, undefined, admin));
    expect(mine.entries.map((e: { kind: string }) => e.kind)).toEqual(['agent']);
    const future = json(await call(server.app, 'GET', `/api/v1/audit?since=${new Date(Date.now() + 3_600_000).toISOString()}`, undefined, admin));
    expect(future.entries).toEqual([]);
    for (const query of ['since=yesterday', 'limit=101', 'limit=0', 'cursor=x', 'color=red']) {
      const bad = await call(server.app, 'GET', `/api/v1/audit?${query}`, undefined, admin);
      expect(bad.statusCode, query).toBe(422);
    }
  });

  it('names on each evaluation event the store revision of the control set that decided it', async () => {
    const id = await create('block-drop');
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'support-bot' }, admin);
    await call(server.app, 'POST', `/api/v1/agents/support-bot/controls/${id}`, undefined, admin);
    const set = json(await call(server.app, 'GET', '/api/v1/agents/support-bot/controls', undefined, regular));
    const linkRevision = json(await history(id)).entries[0].revision as number;
    expect(set.set_revision).toBe(linkRevision);
    await call(server.app, 'POST', '/api/v1/evaluation', step('DROP TABLE a'), regular);
    // A write to the control: the next decision is made by a newer set.
    await call(server.app, 'PUT', `/api/v1/controls/${id}/data`, { data: sqlControl({ description: 'v2' }) }, admin);
    const updateRevision = json(await history(id)).entries[0].revision as number;
    await call(server.app, 'POST', '/api/v1/evaluation', step('DROP TABLE b'), regular);
    await server.observability!.flush();
    const events = json(await call(server.app, 'POST', '/api/v1/observability/events/query', { control_ids: [id] }, regular)).events;
    expect(events.map((e: { set_revision: number }) => e.set_revision)).toEqual([updateRevision, linkRevision]);
    expect(updateRevision).toBeGreaterThan(linkRevision);
  });
});
