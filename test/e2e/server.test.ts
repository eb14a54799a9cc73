import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Runs the built binary (npm test builds first): `node dist/cli/main.js serve`.
const MAIN = join(import.meta.dirname, '../../dist/cli/main.js');

let dir: string;
let child: ChildProcess;
let baseUrl: string;
let stderr = '';

function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(GUARD_|DATABASE_URL|DB_URL|PORT|HOST|OBSERVABILITY_)/.test(name)) delete env[name];
  }
  return { ...env, GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: 'e2e-admin', GUARD_API_KEYS: 'e2e-reader' };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-e2e-server-'));
  child = spawn(process.execPath, [MAIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', join(dir, 'guard.db')], {
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  baseUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /guardctl listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
});

afterAll(() => {
  if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

const admin = { 'content-type': 'application/json', 'x-api-key': 'e2e-admin' };
const reader = { 'content-type': 'application/json', 'x-api-key': 'e2e-reader' };

async function send(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: JSON.parse(await res.text()) };
}

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
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(existsSync(join(dir, 'guard.db'))).toBe(true);
    expect(stderr).not.toContain('e2e-admin');
  });
});
