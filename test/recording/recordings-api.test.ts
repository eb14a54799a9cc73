import { afterEach, describe, expect, it, vi } from 'vitest';
import { REDACTED } from '../../src/recording/index.js';
import { seedAgentWithControl, startTestServer, type TestServer } from '../server/helpers.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setUp(env: Record<string, string>) {
  server = await startTestServer({ env: { OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '0.05', ...env } });
  const { app } = server;
  await seedAgentWithControl(app, 'bot', 'no-drop');
  return app;
}

const evaluate = (app: TestServer['app'], query: string) =>
  app.inject({
    method: 'POST', url: '/api/v1/evaluation',
    payload: { agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query, password: 'p' } } },
  });

describe('GET /api/v1/recordings', () => {
  it('returns the evaluated steps, redacted, with their decisions, page by page', async () => {
    const app = await setUp({ GUARD_RECORD_STEPS: 'true' });
    expect((await evaluate(app, 'DROP TABLE x')).statusCode).toBe(200);
    expect((await evaluate(app, 'SELECT 1')).statusCode).toBe(200);
    expect((await evaluate(app, 'SELECT 2')).statusCode).toBe(200);
    await vi.waitFor(async () => {
      const body = JSON.parse((await app.inject({ url: '/api/v1/recordings' })).body) as { steps: unknown[] };
      expect(body.steps).toHaveLength(3);
    });
    const first = await app.inject({ url: '/api/v1/recordings?limit=2&agent_name=BOT' });
    expect(first.statusCode).toBe(200);
    const page = JSON.parse(first.body) as { steps: Array<{ decision: string; step: { input: Record<string, unknown> } }>; next_cursor: number };
    expect(page.steps.map((s) => s.decision)).toEqual(['deny', 'allow']);
    expect(page.steps[0]!.step.input).toEqual({ query: 'DROP TABLE x', password: REDACTED });
    const second = JSON.parse((await app.inject({ url: `/api/v1/recordings?limit=2&cursor=${page.next_cursor}` })).body) as { steps: unknown[]; next_cursor: null };
    expect(second.steps).toHaveLength(1);
    expect(second.next_cursor).toBeNull();
  });

  it('records nothing when recording is off (the default)', async () => {
    const app = await setUp({});
    await evaluate(app, 'DROP TABLE x');
    await server!.app.close();
    const rows = await server!.store.queryRecordedSteps({ limit: 10 });
    expect(rows.steps).toEqual([]);
  });

  it('rejects a page size above the maximum and a bad since with 422 problem details', async () => {
    const app = await setUp({ GUARD_RECORD_STEPS: 'true' });
    const big = await app.inject({ url: '/api/v1/recordings?limit=5000' });
    expect(big.statusCode).toBe(422);
    expect(big.headers['content-type']).toContain('application/problem+json');
    expect((JSON.parse(big.body) as { errors: Array<{ field: string }> }).errors[0]!.field).toBe('limit');
    const since = await app.inject({ url: '/api/v1/recordings?since=yesterday' });
    expect(since.statusCode).toBe(422);
  });

  it('needs a key when authentication is on (read access)', async () => {
    server = await startTestServer({ env: { GUARD_RECORD_STEPS: 'true', GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: 'regular-key-0000001', GUARD_ADMIN_API_KEYS: 'admin-key-000000001' } });
    const app = server.app;
    expect((await app.inject({ url: '/api/v1/recordings' })).statusCode).toBe(401);
    expect((await app.inject({ url: '/api/v1/recordings', headers: { 'x-api-key': 'regular-key-0000001' } })).statusCode).toBe(200);
  });
});
