import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send as request, startServeProcess, type ServeProcess } from './serve-process.js';

let dir: string;
let server: ServeProcess;
let baseUrl: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-e2e-server-'));
  server = await startServeProcess({
    args: ['--db', join(dir, 'guard.db')],
    env: { GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: 'e2e-admin-key-000001', GUARD_API_KEYS: 'e2e-reader-key-00001' },
  });
  baseUrl = server.url;
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const admin = { 'content-type': 'application/json', 'x-api-key': 'e2e-admin-key-000001' };
const reader = { 'content-type': 'application/json', 'x-api-key': 'e2e-reader-key-00001' };

const send = (method: string, path: string, headers: Record<string, string>, body?: unknown) => request(baseUrl, method, path, body, headers);

describe('guardctl serve (built binary, real HTTP)', () => {
  it('serves the control lifecycle and evaluation over HTTP with API keys', async () => {
    expect((await send('GET', '/health', {})).body.status).toBe('healthy');
    expect((await send('GET', '/api/v1/agents', {})).status).toBe(401);

    const created = await send('PUT', '/api/v1/controls', admin, {
      name: 'block-drop',
      data: {
        scope: { step_types: ['tool'], stages: ['pre'] },
        selector: { path: 'input.query' },
        evaluator: { name: 'regex', config: { pattern: '(?i)drop\\s+table' } },
        action: { decision: 'deny' },
      },
    });
    expect(created.status).toBe(201);
    const id = created.body.control_id as number;
    expect((await send('PUT', '/api/v1/controls', reader, { name: 'x' })).status).toBe(403);

    expect((await send('POST', '/api/v1/agents/initAgent', reader, { agent_name: 'e2e-bot' })).status).toBe(201);
    expect((await send('POST', `/api/v1/agents/e2e-bot/controls/${id}`, admin)).body).toEqual({ linked: true });

    const step = { agent_name: 'e2e-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } } };
    const verdict = await send('POST', '/api/v1/evaluation', reader, step);
    expect(verdict.status).toBe(200);
    expect(verdict.body).toMatchObject({ is_safe: false, decision: 'deny' });

    const bad = await send('PUT', '/api/v1/controls', admin, { name: '' });
    expect(bad.status).toBe(422);
    expect(bad.type).toContain('application/problem+json');

    const metrics = await fetch(`${baseUrl}/metrics`);
    expect(await metrics.text()).toContain('guard_evaluations_total');
  });

  it('exits cleanly on SIGTERM and leaves the database on disk', async () => {
    expect(await server.stop()).toBe(0);
    expect(existsSync(join(dir, 'guard.db'))).toBe(true);
    expect(server.stderr()).not.toContain('e2e-admin-key-000001');
  });
});
