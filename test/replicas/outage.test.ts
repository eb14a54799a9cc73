/**
 * A database outage in process: the app reaches PostgreSQL through a TCP proxy the test
 * cuts. Evaluations go on from the compiled sets, writes answer 503, health says
 * degraded, ingested events wait in memory; after restore everything recovers by itself.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HealthMonitor } from '../../src/server/health.js';
import { createSchema, dropSchemas, pgRequired, pgTarget, pgSuiteTitle, pgUnreachable, schemaUrl, skipReasonOf } from './pg.js';
import { denyDrop, dropStep, startPgApp, type PgApp } from './pg-app.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

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

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('database outage', unreachable), () => {
  async function setup(): Promise<{ proxy: TcpProxy; app: PgApp; direct: PgApp }> {
    const schema = await createSchema(schemas);
    const proxy = await startTcpProxy(pgTarget());
    cleanups.push(() => proxy.close());
    const app = await startPgApp(schemaUrl(schema, proxy.port));
    cleanups.push(() => app.close());
    // A second replica with a direct connection: the database itself never went away.
    const direct = await startPgApp(schemaUrl(schema));
    cleanups.push(() => direct.close());
    return { proxy, app, direct };
  }

  async function evaluate(app: PgApp, agent: string) {
    const res = await app.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: dropStep(agent) });
    return { status: res.statusCode, body: JSON.parse(res.body) as Record<string, unknown> };
  }

  it('evaluates from memory, refuses writes with 503, reports degraded, and recovers', async () => {
    const { proxy, app, direct } = await setup();
    const created = await app.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop', data: denyDrop } });
    const id = (JSON.parse(created.body) as { control_id: number }).control_id;
    await app.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'bot' } });
    await app.app.inject({ method: 'POST', url: `/api/v1/agents/bot/controls/${id}`, headers: { 'content-type': 'application/json' } });
    // A control the agent's SDK runs: its events come to the server by ingest.
    const sdkRun = await app.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop-in-sdk', data: { ...denyDrop, execution: 'sdk' } } });
    const sdkId = (JSON.parse(sdkRun.body) as { control_id: number }).control_id;
    expect((await evaluate(app, 'bot')).body.decision).toBe('deny');
    expect((await app.app.inject({ method: 'GET', url: '/health' })).json()).toMatchObject({ status: 'healthy' });

    await proxy.cut();
    // Even a set invalidated during the outage keeps deciding from its last build.
    app.app.controlSets.invalidate('all');
    for (let i = 0; i < 3; i++) {
      const verdict = await evaluate(app, 'bot');
      expect(verdict.status).toBe(200);
      expect(verdict.body.decision).toBe('deny');
    }
    expect(app.app.controlSets.degraded).toBe(1);

    const write = await app.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'during-outage' } });
    expect(write.statusCode).toBe(503);
    expect(write.headers['content-type']).toContain('application/problem+json');
    const problem = write.json<Record<string, unknown>>();
    expect(problem).toMatchObject({ status: 503, error_code: 'unavailable' });
    expect(JSON.stringify(problem)).not.toMatch(/SELECT|INSERT|127\.0\.0\.1|ECONN/i);

    // An agent never compiled cannot be evaluated without the database: 503, not a guess.
    const unknown = await evaluate(app, 'never-seen');
    expect(unknown.status).toBe(503);

    await expect.poll(
      async () => (await app.app.inject({ method: 'GET', url: '/health' })).json<{ status: string }>().status === 'degraded',
      { interval: 20, message: 'health to say degraded' },
    ).toBe(true);
    const health = await app.app.inject({ method: 'GET', url: '/health' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({ status: 'degraded', database: 'unavailable', version: expect.any(String) });

    // Events ingested now are acknowledged and wait in memory.
    const event = {
      control_execution_id: 'outage-1',
      trace_id: 't'.repeat(32),
      span_id: 's'.repeat(16),
      agent_name: 'bot',
      control_id: sdkId,
      control_name: 'no-drop-in-sdk',
      check_stage: 'pre',
      applies_to: 'tool',
      action: 'deny',
      matched: true,
      confidence: 1,
      timestamp: new Date().toISOString(),
      execution_duration_ms: 1,
      evaluator_name: 'regex',
      selector_path: 'input.query',
      error_message: null,
      metadata: null,
    };
    const ingest = await app.app.inject({ method: 'POST', url: '/api/v1/observability/events', payload: { events: [event] } });
    expect(ingest.statusCode).toBe(202);
    expect(ingest.json()).toMatchObject({ enqueued: 1, dropped: 0 });
    await app.observability.buffer.flush();
    // The failed flush kept them: this event and those of the evaluations above.
    const waiting = app.observability.buffer.size;
    expect(waiting).toBeGreaterThanOrEqual(1);

    // Meanwhile a write lands through the other replica (its notification is lost to us).
    await direct.app.inject({ method: 'PATCH', url: `/api/v1/controls/${id}`, payload: { enabled: false } });

    await proxy.restore();
    await expect.poll(async () => (await app.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'after' } })).statusCode === 201, { interval: 20, message: 'writes to succeed' }).toBe(true);
    await expect.poll(async () => (await evaluate(app, 'bot')).body.decision === 'allow', { interval: 20, message: 'the write made elsewhere to show up' }).toBe(true);
    await expect.poll(
      async () => (await app.app.inject({ method: 'GET', url: '/health' })).json<{ status: string }>().status === 'healthy',
      { interval: 20, message: 'health to recover' },
    ).toBe(true);
    await app.observability.buffer.flush();
    expect(app.observability.buffer.size).toBe(0);
    const stored = await direct.store.queryEvents({ limit: 1000, offset: 0 });
    expect(stored.events.map((e) => e.control_execution_id)).toContain('outage-1');
    expect(stored.total).toBeGreaterThanOrEqual(waiting);
  });

  it('the health check runs at most once per interval however often it is asked', async () => {
    const { proxy, app } = await setup();
    let now = 0;
    const monitor = new HealthMonitor(app.store, { now: () => now, timeoutMs: 2000, maxAgeMs: 1000 });
    expect(await monitor.database()).toBe('ok');
    await proxy.cut();
    now = 999;
    expect(await monitor.database()).toBe('ok'); // cached
    now = 1000;
    expect(await monitor.database()).toBe('unavailable');
    await proxy.restore();
    now = 1500;
    expect(await monitor.database()).toBe('unavailable'); // cached
    now = 2000;
    await expect.poll(async () => {
      now += 1000;
      return (await monitor.database()) === 'ok';
    }, { interval: 20, message: 'the monitor to see the database again' }).toBe(true);
  });
});
