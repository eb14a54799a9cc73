/**
 * A `guardctl serve` process whose database connection runs through a proxy the test
 * cuts: evaluations continue from memory, writes answer 503, health says degraded; after
 * restore, writes succeed, health is healthy and a write made meanwhile shows up.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createSchema, dropSchemas, pgRequired, pgTarget, pgSuiteTitle, pgUnreachable, schemaUrl, skipReasonOf } from '../replicas/pg.js';
import { denyDrop, dropStep } from '../replicas/pg-app.js';
import { send, startServeProcess, type ServeProcess } from './serve-process.js';
import { startTcpProxy, type TcpProxy } from '../replicas/tcp-proxy.js';

const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));

const schemas: string[] = [];
const processes: ServeProcess[] = [];
let proxy: TcpProxy | undefined;
afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  await proxy?.close();
  if (!unreachable) await dropSchemas(schemas);
});

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('database outage (server process)', unreachable), () => {
  it('keeps evaluating, refuses writes, reports degraded, and recovers by itself', async () => {
    const schema = await createSchema(schemas);
    proxy = await startTcpProxy(pgTarget());
    const [server, other] = await Promise.all([
      startServeProcess({ databaseUrl: schemaUrl(schema, proxy.port), env: { GUARD_SYNC_INTERVAL_MS: '200' } }),
      startServeProcess({ databaseUrl: schemaUrl(schema) }),
    ]);
    processes.push(server, other);

    const created = await send(server.url, 'PUT', '/api/v1/controls', { name: 'no-drop', data: denyDrop });
    const id = created.body.control_id as number;
    await send(server.url, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' });
    await send(server.url, 'POST', `/api/v1/agents/bot/controls/${id}`);
    expect((await send(server.url, 'POST', '/api/v1/evaluation', dropStep('bot'))).body.decision).toBe('deny');

    await proxy.cut();
    for (let i = 0; i < 5; i++) {
      const verdict = await send(server.url, 'POST', '/api/v1/evaluation', dropStep('bot'));
      expect(verdict.status).toBe(200);
      expect(verdict.body).toMatchObject({ decision: 'deny', is_safe: false });
    }
    const write = await send(server.url, 'PUT', '/api/v1/controls', { name: 'during-outage' });
    expect(write.status).toBe(503);
    expect(write.type).toContain('application/problem+json');
    expect(write.body).toMatchObject({ status: 503, error_code: 'unavailable' });
    await expect.poll(async () => (await send(server.url, 'GET', '/health')).body.status === 'degraded', { interval: 20, message: 'health to say degraded' }).toBe(true);
    expect((await send(server.url, 'GET', '/health')).body).toMatchObject({ database: 'unavailable' });

    // The other replica still reaches the database; its write cannot notify the cut one.
    expect((await send(other.url, 'PATCH', `/api/v1/controls/${id}`, { enabled: false })).status).toBe(200);

    await proxy.restore();
    await expect.poll(async () => (await send(server.url, 'PUT', '/api/v1/controls', { name: 'after-outage' })).status === 201, { interval: 20, message: 'writes to succeed' }).toBe(true);
    await expect.poll(async () => (await send(server.url, 'GET', '/health')).body.status === 'healthy', { interval: 20, message: 'health to recover' }).toBe(true);
    await expect.poll(
      async () => (await send(server.url, 'POST', '/api/v1/evaluation', dropStep('bot'))).body.decision === 'allow',
      { interval: 20, message: 'the write made during the outage to show up' },
    ).toBe(true);
    // The control written after the outage is there for everyone.
    expect((await send(other.url, 'GET', '/api/v1/controls?limit=100')).body.pagination).toMatchObject({ total: 2 });
  });
});
