/**
 * Rate and budget controls when PostgreSQL goes away: the control follows on_error (a
 * deny control fails closed by default), a database that stops answering is given up on
 * after GUARD_COUNTER_TIMEOUT_MS, and counting recovers by itself. Steps of one key that
 * queued behind a statement (store/postgres/counters.ts) fail with it, each on its own.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { CountRequest } from '../../src/evaluators/types.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { TEST_POOL, createSchema, dropSchemas, pgRequired, pgSuiteTitle, pgTarget, pgUnreachable, schemaUrl } from './pg.js';
import { startPgApp, type PgApp } from './pg-app.js';
import { startTcpProxy } from './tcp-proxy.js';

const unreachable = await pgUnreachable();
const schemas: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  if (!unreachable) await dropSchemas(schemas);
});

const rate = (onError?: 'allow' | 'deny') => ({
  scope: { step_types: ['tool'], stages: ['pre'] },
  selector: { path: '*' },
  evaluator: { name: 'rate', config: { limit: 2, window: '1m', key: 'context.user_id', ...(onError ? { on_error: onError } : {}) } },
  action: { decision: 'deny' },
});

async function link(app: PgApp, agent: string, name: string, data: unknown): Promise<void> {
  expect((await app.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: agent } })).statusCode).toBeLessThan(300);
  const created = await app.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name, data } });
  expect(created.statusCode).toBe(201);
  const id = (JSON.parse(created.body) as { control_id: number }).control_id;
  // Writes send JSON, even an empty object.
  expect((await app.app.inject({ method: 'POST', url: `/api/v1/agents/${agent}/controls/${id}`, payload: {} })).statusCode).toBe(200);
}

async function evaluate(app: PgApp, agent: string, user: string) {
  const res = await app.app.inject({
    method: 'POST',
    url: '/api/v1/evaluation',
    payload: { agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'search', input: {}, context: { user_id: user } } },
  });
  expect(res.statusCode).toBe(200);
  return res.json<{ decision: string; matches: Array<{ error?: string }>; errors: Array<{ error?: string }> }>();
}

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('counters during a database outage', unreachable), () => {
  it('follows on_error while the database is cut or frozen, and recovers by itself', async () => {
    const schema = await createSchema(schemas);
    const proxy = await startTcpProxy(pgTarget());
    cleanups.push(() => proxy.close());
    const app = await startPgApp(schemaUrl(schema, proxy.port), { GUARD_COUNTER_TIMEOUT_MS: '500' });
    cleanups.push(() => app.close());
    await link(app, 'strict', 'strict-rate', rate());
    await link(app, 'lax', 'lax-rate', rate('allow'));

    expect((await evaluate(app, 'strict', 'ann')).decision).toBe('allow');
    expect((await evaluate(app, 'strict', 'ann')).decision).toBe('allow');
    expect((await evaluate(app, 'strict', 'ann')).decision).toBe('deny');
    expect((await evaluate(app, 'lax', 'ann')).decision).toBe('allow');

    await proxy.cut();
    const closed = await evaluate(app, 'strict', 'bob');
    expect(closed.decision).toBe('deny');
    expect(closed.matches[0]!.error).toMatch(/database unavailable|connect|terminated/i);
    const open = await evaluate(app, 'lax', 'bob');
    expect(open.decision).toBe('allow');
    expect(open.errors).toHaveLength(1);
    await proxy.restore();

    await expect.poll(async () => (await evaluate(app, 'strict', 'cat')).decision === 'allow', { interval: 20, message: 'counting to recover after the cut' }).toBe(true);

    proxy.freeze();
    const frozen = await evaluate(app, 'strict', 'dan');
    expect(frozen.decision).toBe('deny');
    expect(frozen.matches[0]!.error).toMatch(/timed out|timeout/i);
    const frozenOpen = await evaluate(app, 'lax', 'dan');
    expect(frozenOpen.decision).toBe('allow');
    proxy.thaw();

    await expect.poll(async () => (await evaluate(app, 'strict', 'eve')).decision === 'allow', { interval: 20, message: 'counting to recover after the freeze' }).toBe(true);
    // Counts made before the outage are still there.
    expect((await evaluate(app, 'strict', 'ann')).decision).toBe('deny');
  });

  it('fails every step of a key queued behind a failed statement, and the next batch counts', async () => {
    const schema = await createSchema(schemas);
    const proxy = await startTcpProxy(pgTarget());
    cleanups.push(() => proxy.close());
    const store = await PostgresStore.open(schemaUrl(schema, proxy.port), { ...TEST_POOL, counterTimeoutMs: 400, connectionTimeoutMs: 1000 });
    cleanups.push(() => store.close());
    const shared = store.sharedCounters;
    const step: CountRequest = {
      control_id: 1, counter: '1', key: 'ann', window_ms: 60_000, amount: 1, max: 100, always: true, kind: 'rate', consistency: 'exact',
    };
    const burst = () => Promise.allSettled(Array.from({ length: 6 }, () => shared.countShared(step, Date.now(), true)));
    expect((await shared.countShared(step, Date.now(), true)).used).toBe(1);

    proxy.freeze();
    const frozen = await burst();
    expect(frozen.map((r) => r.status)).toEqual(Array(6).fill('rejected'));
    for (const r of frozen) expect(String((r as PromiseRejectedResult).reason)).toMatch(/timed out/);
    proxy.thaw();
    await expect.poll(async () => (await burst()).every((r) => r.status === 'fulfilled'), { interval: 20, message: 'counting to recover after the freeze' }).toBe(true);

    await proxy.cut();
    const cut = await burst();
    expect(cut.map((r) => r.status)).toEqual(Array(6).fill('rejected'));
    for (const r of cut) expect(String((r as PromiseRejectedResult).reason)).toMatch(/database unavailable|timed out/i);
    await proxy.restore();
    await expect.poll(async () => (await burst()).every((r) => r.status === 'fulfilled'), { interval: 20, message: 'counting to recover after the cut' }).toBe(true);
    // After the outage, steps of the key are counted one after the other again.
    const after = (await burst()).map((r) => (r as PromiseFulfilledResult<{ used: number }>).value.used);
    expect(after.slice(1).map((used, i) => used - after[i]!)).toEqual(Array(5).fill(1));
  });
});
