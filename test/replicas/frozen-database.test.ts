/**
 * A database that hangs instead of going away: the app reaches PostgreSQL through a TCP
 * proxy that stops forwarding (connections stay open, nothing comes back), or a table
 * another session keeps locked. Every read and write answers 503 with a problem body once
 * the query or statement timeout passes, instead of waiting without bound; evaluations of
 * compiled agents go on from memory; when the database answers again, so does the app.
 */
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSchema, dropSchemas, pgRequired, pgSuiteTitle, pgTarget, pgUnreachable, pgUrl, schemaUrl, skipReasonOf } from './pg.js';
import { denyDrop, dropStep, startPgApp, type PgApp } from './pg-app.js';
import { startTcpProxy } from './tcp-proxy.js';

const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));

const schemas: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  if (!unreachable) await dropSchemas(schemas);
});

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH';

async function send(app: PgApp, method: Method, url: string, payload?: unknown) {
  const res = await app.app.inject({ method, url, ...(payload === undefined ? (method === 'GET' ? {} : { headers: { 'content-type': 'application/json' } }) : { payload: payload as never }) });
  return { status: res.statusCode, type: String(res.headers['content-type']), body: JSON.parse(res.body) as Record<string, unknown> };
}

function expectUnavailable(res: { status: number; type: string; body: Record<string, unknown> }, what: string) {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(503);
  expect(res.type).toContain('application/problem+json');
  expect(res.body).toMatchObject({ status: 503, error_code: 'unavailable' });
}

async function seed(app: PgApp): Promise<number> {
  const created = await send(app, 'PUT', '/api/v1/controls', { name: 'no-drop', data: denyDrop });
  const id = created.body.control_id as number;
  await send(app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' });
  await send(app, 'POST', `/api/v1/agents/bot/controls/${id}`);
  expect((await send(app, 'POST', '/api/v1/evaluation', dropStep('bot'))).body.decision).toBe('deny');
  return id;
}

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('a frozen database', unreachable), () => {
  it('answers 503 to reads and writes after the query timeout, keeps evaluating, and recovers', async () => {
    const schema = await createSchema(schemas);
    const proxy = await startTcpProxy(pgTarget());
    cleanups.push(() => proxy.close());
    const app = await startPgApp(schemaUrl(schema, proxy.port), {
      GUARD_PG_QUERY_TIMEOUT_MS: '300',
      GUARD_PG_STATEMENT_TIMEOUT_MS: '250',
      GUARD_PG_CONNECT_TIMEOUT_MS: '300',
    });
    cleanups.push(() => {
      proxy.thaw();
      return app.close();
    });
    const id = await seed(app);

    proxy.freeze();
    // More requests at once than the pool has connections: those waiting for a
    // connection time out too.
    const answers = await Promise.all([
      ...Array.from({ length: 12 }, () => send(app, 'GET', '/api/v1/controls')),
      send(app, 'PUT', '/api/v1/controls', { name: 'during-freeze' }),
      send(app, 'GET', '/api/v1/agents/bot'),
      send(app, 'PATCH', `/api/v1/controls/${id}`, { enabled: false }),
      send(app, 'POST', '/api/v1/changes', { changes: [{ op: 'create_control', control: { name: 'batch' } }] }),
      send(app, 'GET', '/api/v1/observability/stats'),
      send(app, 'POST', '/api/v1/evaluation', dropStep('never-seen')),
    ]);
    answers.forEach((res, i) => expectUnavailable(res, `request ${i}`));
    // The compiled agent is still decided from memory.
    const verdict = await send(app, 'POST', '/api/v1/evaluation', dropStep('bot'));
    expect(verdict.status).toBe(200);
    expect(verdict.body.decision).toBe('deny');

    proxy.thaw();
    await expect.poll(async () => (await send(app, 'PUT', '/api/v1/controls', { name: 'after-freeze' })).status === 201, { interval: 20, message: 'writes to succeed' }).toBe(true);
    const list = await send(app, 'GET', '/api/v1/controls');
    expect((list.body.controls as Array<{ name: string }>).map((c) => c.name).sort()).toEqual(['after-freeze', 'no-drop']);
  });

  it('cancels a statement stuck on a lock after the statement timeout (503), and the connection serves the next request', async () => {
    const schema = await createSchema(schemas);
    const app = await startPgApp(schemaUrl(schema), { GUARD_PG_STATEMENT_TIMEOUT_MS: '300' });
    cleanups.push(() => app.close());
    await seed(app);

    const locker = new pg.Client({ connectionString: pgUrl });
    await locker.connect();
    cleanups.push(() => locker.end());
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE "${schema}".controls IN ACCESS EXCLUSIVE MODE`);
    expectUnavailable(await send(app, 'GET', '/api/v1/controls'), 'read under lock');
    expectUnavailable(await send(app, 'PUT', '/api/v1/controls', { name: 'under-lock' }), 'write under lock');
    await locker.query('ROLLBACK');

    expect((await send(app, 'PUT', '/api/v1/controls', { name: 'after-lock' })).status).toBe(201);
  });
});
