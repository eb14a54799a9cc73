/**
 * Two `guardctl serve` processes on one PostgreSQL database: a control created and linked
 * through one decides evaluations on the other.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createSchema, dropSchemas, pgRequired, pgUnreachable, pgUrl, schemaUrl, skipReasonOf } from '../replicas/pg.js';
import { denyDrop, dropStep } from '../replicas/pg-app.js';
import { send, startServeProcess, type ServeProcess } from './serve-process.js';

const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));

const schemas: string[] = [];
const processes: ServeProcess[] = [];
afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  if (!unreachable) await dropSchemas(schemas);
});

it.runIf(pgRequired)('PostgreSQL is reachable when GUARD_REQUIRE_PG=1', () => {
  expect(unreachable, `GUARD_REQUIRE_PG=1 but ${pgUrl} is unreachable`).toBeNull();
});

describe.skipIf(unreachable !== null)(unreachable ? skipReasonOf(unreachable) : 'two server processes, one database', () => {
  it('a change made through replica A decides on replica B', async () => {
    const url = schemaUrl(await createSchema(schemas));
    // The fallback check is slowed down so that only LISTEN/NOTIFY can pass this quickly.
    const [a, b] = await Promise.all([
      startServeProcess({ databaseUrl: url, env: { GUARD_SYNC_INTERVAL_MS: '600000' } }),
      startServeProcess({ databaseUrl: url, env: { GUARD_SYNC_INTERVAL_MS: '600000' } }),
    ]);
    processes.push(a, b);
    expect(a.url).not.toBe(b.url);

    expect((await send(b.url, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' })).status).toBe(201);
    const before = await send(b.url, 'POST', '/api/v1/evaluation', dropStep('bot'));
    expect(before.body).toMatchObject({ decision: 'allow', is_safe: true });

    const created = await send(a.url, 'PUT', '/api/v1/controls', { name: 'no-drop', data: denyDrop });
    expect(created.status).toBe(201);
    const link = await send(a.url, 'POST', `/api/v1/agents/bot/controls/${created.body.control_id as number}`);
    expect(link.status).toBe(200);

    await expect.poll(async () => (await send(b.url, 'POST', '/api/v1/evaluation', dropStep('bot'))).body.decision === 'deny', { interval: 20, message: 'B to deny' }).toBe(true);
    const after = await send(b.url, 'POST', '/api/v1/evaluation', dropStep('bot'));
    expect(after.body).toMatchObject({ decision: 'deny', is_safe: false });
    expect((after.body.matches as Array<{ control_name: string }>)[0]?.control_name).toBe('no-drop');
  });
});
