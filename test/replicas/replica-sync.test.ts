/**
 * Two in-process replicas on one PostgreSQL schema: a write through one reaches
 * evaluations on the other through LISTEN/NOTIFY, and through the periodic revision check
 * when no notification arrives.
 */
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSchema, dropSchemas, pgRequired, pgSuiteTitle, pgUnreachable, pgUrl, schemaUrl, skipReasonOf } from './pg.js';
import { denyDrop, dropStep, startPgApp, type PgApp } from './pg-app.js';

const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));

const schemas: string[] = [];
const apps: PgApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
  if (!unreachable) await dropSchemas(schemas);
});

it.runIf(pgRequired)('PostgreSQL is reachable when GUARD_REQUIRE_PG=1', () => {
  expect(unreachable, `GUARD_REQUIRE_PG=1 but ${pgUrl} is unreachable`).toBeNull();
});

async function decisionOn(replica: PgApp, agent: string): Promise<string> {
  const res = await replica.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: dropStep(agent) });
  expect(res.statusCode).toBe(200);
  return (JSON.parse(res.body) as { decision: string }).decision;
}

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('replicas on one PostgreSQL database', unreachable), () => {
  async function twoReplicas(env: Record<string, string> = {}): Promise<[PgApp, PgApp]> {
    const url = schemaUrl(await createSchema(schemas));
    const a = await startPgApp(url, env);
    apps.push(a);
    const b = await startPgApp(url, env);
    apps.push(b);
    return [a, b];
  }

  it('a control created and linked through A decides on B within one second', async () => {
    // A long fallback interval: only the notification can make this fast.
    const [a, b] = await twoReplicas({ GUARD_SYNC_INTERVAL_MS: '600000' });
    await a.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'bot' } });
    expect(await decisionOn(b, 'bot')).toBe('allow');

    const created = await a.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop', data: denyDrop } });
    expect(created.statusCode).toBe(201);
    const id = (JSON.parse(created.body) as { control_id: number }).control_id;
    const linked = await a.app.inject({ method: 'POST', url: `/api/v1/agents/bot/controls/${id}`, headers: { 'content-type': 'application/json' } });
    expect(linked.statusCode).toBe(200);

    // The one-second goal is measured by `npm run bench -- postgres`; tests only poll.
    await expect.poll(async () => (await decisionOn(b, 'bot')) === 'deny', { interval: 20, message: 'B to deny' }).toBe(true);

    // And back: disabling on B reaches A.
    expect(await decisionOn(a, 'bot')).toBe('deny');
    await b.app.inject({ method: 'PATCH', url: `/api/v1/controls/${id}`, payload: { enabled: false } });
    await expect.poll(async () => (await decisionOn(a, 'bot')) === 'allow', { interval: 20, message: 'A to allow again' }).toBe(true);
  });

  it('the periodic revision check catches a write whose notification never came', async () => {
    const [a, b] = await twoReplicas({ GUARD_SYNC_INTERVAL_MS: '100' });
    const created = await a.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop', data: denyDrop } });
    const id = (JSON.parse(created.body) as { control_id: number }).control_id;
    await a.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'bot' } });
    await a.app.inject({ method: 'POST', url: `/api/v1/agents/bot/controls/${id}`, headers: { 'content-type': 'application/json' } });
    await expect.poll(async () => (await decisionOn(b, 'bot')) === 'deny', { interval: 20, message: 'B to deny' }).toBe(true);

    // A write straight to the tables, bumping the revision but sending no NOTIFY.
    const client = new pg.Client({ connectionString: schemaUrl(schemas.at(-1)!) });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query('UPDATE controls SET enabled = false WHERE control_id = $1', [id]);
      await client.query('UPDATE store_revision SET value = value + 1 WHERE id = 1');
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
    await expect.poll(async () => (await decisionOn(b, 'bot')) === 'allow', { interval: 20, message: 'B to notice the silent write' }).toBe(true);
  });
});
