import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cleanEnv, MAIN, startServeProcess, type ServeProcess } from './serve-process.js';

// The built binary (npm test builds first); GUARDCTL_MAIN points elsewhere for a local run.
const SOCKET = `guardctl-tui-e2e-${process.pid}`;

let dir: string;
let server: ServeProcess | undefined;
let baseUrl: string;

const admin = { 'content-type': 'application/json', 'x-api-key': 'e2e-admin-key-000001' };

async function call(method: string, path: string, body?: unknown): Promise<{ control_id: number }> {
  const res = await fetch(`${baseUrl}${path}`, { method, headers: admin, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { control_id: number };
}

/** Traffic: `n` evaluations cycling allow, deny and steer. */
async function traffic(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const kind = i % 3;
    const step =
      kind === 0
        ? { type: 'tool', name: 'search', input: { query: `weather ${i}` } }
        : kind === 1
          ? { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } }
          : { type: 'tool', name: 'send_email', input: { to: 'bob@example.com' } };
    await call('POST', '/api/v1/evaluation', { agent_name: 'e2e-bot', stage: 'pre', step });
  }
}

beforeAll(async () => {
  const tmux = spawnSync('tmux', ['-V']);
  if (tmux.error || tmux.status !== 0) {
    throw new Error('tmux is needed for the dashboard end-to-end test: install it (apt-get install -y tmux)');
  }
  dir = mkdtempSync(join(tmpdir(), 'guardctl-e2e-tui-'));
  server = await startServeProcess({
    args: ['--db', join(dir, 'guard.db')],
    env: { GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: 'e2e-admin-key-000001', GUARD_API_KEYS: 'e2e-reader-key-00001' },
  });
  baseUrl = server.url;
  const deny = await call('PUT', '/api/v1/controls', {
    name: 'block-drop',
    data: {
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)drop\\s+table' } },
      action: { decision: 'deny' },
    },
  });
  const steer = await call('PUT', '/api/v1/controls', {
    name: 'steer-external-mail',
    data: {
      scope: { step_names: ['send_email'] },
      selector: { path: 'input.to' },
      evaluator: { name: 'regex', config: { pattern: '@example\\.com$' } },
      action: { decision: 'steer', steering_context: { message: 'ask the user before mailing outside', required_actions: ['confirm'] } },
    },
  });
  await call('POST', '/api/v1/agents/initAgent', { agent_name: 'e2e-bot' });
  await call('POST', `/api/v1/agents/e2e-bot/controls/${deny.control_id}`);
  await call('POST', `/api/v1/agents/e2e-bot/controls/${steer.control_id}`);
});

afterAll(async () => {
  spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const tmux = (...args: string[]) => spawnSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
const screen = (): string => tmux('capture-pane', '-p', '-t', 'tui').stdout;
const untilScreen = (check: (s: string) => boolean) =>
  vi.waitFor(
    () => {
      const s = screen();
      if (!check(s)) throw new Error(`screen did not show it yet:\n${s}`);
      return s;
    },
    { timeout: 30_000, interval: 100 },
  );

describe('guardctl tui under tmux against a real server', () => {
  it('shows live rows, a deny, filters, and the detail view after Enter', async () => {
    const command = `exec env TERM=xterm-256color ${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)} tui --server ${baseUrl} --api-key e2e-reader-key-00001`;
    const started = spawnSync('tmux', ['-L', SOCKET, '-f', '/dev/null', 'new-session', '-d', '-x', '120', '-y', '40', '-s', 'tui', command], {
      env: cleanEnv(),
      encoding: 'utf8',
    });
    expect(started.status, started.stderr).toBe(0);
    await untilScreen((s) => s.includes('● live'));

    await traffic(12);
    const live = await untilScreen((s) => s.includes('total 12'));
    expect(live).toMatch(/allow 4\s+deny 4\s+steer 4/);
    expect(live).toMatch(/e2e-bot\s+run_sql\s+pre\s+deny\s+block-drop/);
    expect(live).toMatch(/send_email\s+pre\s+steer\s+steer-external/);
    expect(live).toMatch(/block-drop\s+4/);
    if (process.env.GUARD_TUI_CAPTURE) writeFileSync(process.env.GUARD_TUI_CAPTURE, live);

    tmux('send-keys', '-t', 'tui', '/', 'decision=deny', 'Enter');
    const filtered = await untilScreen((s) => s.includes('filter: decision=deny'));
    const rows = filtered.split('\n').filter((l) => l.includes('e2e-bot'));
    expect(rows).toHaveLength(4);
    for (const row of rows) expect(row).toContain('deny');

    tmux('send-keys', '-t', 'tui', 'Enter');
    const detail = await untilScreen((s) => s.includes('Evaluation '));
    expect(detail).toContain('decision DENY');
    expect(detail).toContain('block-drop  [deny]');
    // What the control matched is masked on the screen too (docs/security.md).
    expect(detail).toContain('data:     "D…E users"');
    expect(detail).toContain('message:  pattern matched "D…E"');
    expect(detail).not.toContain('DROP TABLE');

    tmux('send-keys', '-t', 'tui', 'Escape');
    await untilScreen((s) => s.includes('TIME') && !s.includes('Evaluation '));
    tmux('send-keys', '-t', 'tui', 'q');
    await vi.waitFor(() => expect(tmux('has-session', '-t', 'tui').status).not.toBe(0), { timeout: 30_000, interval: 100 });
  });

  it('at 80 columns: filters in the header, help that fits, no colour with --no-color, paused events shown on resume', async () => {
    const command = `exec env TERM=xterm-256color ${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)} tui --no-color --server ${baseUrl} --api-key e2e-reader-key-00001 --decision deny --filter 'step=run_sql'`;
    const started = spawnSync('tmux', ['-L', SOCKET, '-f', '/dev/null', 'new-session', '-d', '-x', '80', '-y', '24', '-s', 'tui', command], { env: cleanEnv(), encoding: 'utf8' });
    expect(started.status, started.stderr).toBe(0);
    const first = await untilScreen((s) => s.includes('● live'));
    expect(first.split('\n')[2]).toBe('filter: step=run_sql  ·  from the server: decision=deny');

    await traffic(3);
    await untilScreen((s) => s.includes('total 1'));
    tmux('send-keys', '-t', 'tui', 'p');
    await untilScreen((s) => s.includes('PAUSED 0 new'));
    await traffic(6);
    const paused = await untilScreen((s) => s.includes('PAUSED 2 new') && s.includes('total 3'));
    expect(paused.split('\n').filter((l) => l.includes('e2e-bot'))).toHaveLength(1);
    tmux('send-keys', '-t', 'tui', 'p');
    await untilScreen((s) => !s.includes('PAUSED') && s.split('\n').filter((l) => l.includes('e2e-bot')).length === 3);

    // With escapes: the selected row is still shown inverse (7), but no colour is set.
    const styled = tmux('capture-pane', '-p', '-e', '-t', 'tui').stdout;
    const esc = String.fromCharCode(27);
    expect(styled).toMatch(new RegExp(`${esc}\\[[0-9;]*7m`));
    expect(styled).not.toMatch(new RegExp(`${esc}\\[(?:[0-9;]*;)?(3[0-7]|9[0-7])(;[0-9;]*)?m`));

    tmux('send-keys', '-t', 'tui', '?');
    const help = await untilScreen((s) => s.includes('Keys (? or esc: back)'));
    expect(help).toContain('or a bare REGEX; ! inverts a term; empty clears');
    expect(help).not.toContain('…');
    for (const line of help.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
    tmux('send-keys', '-t', 'tui', 'q');
    await vi.waitFor(() => expect(tmux('has-session', '-t', 'tui').status).not.toBe(0), { timeout: 30_000, interval: 100 });
  });

  it('prints one line per event, or JSON lines, when stdout is not a terminal', async () => {
    for (const format of ['text', 'json'] as const) {
      const child = spawn(process.execPath, [MAIN, 'tui', '--server', baseUrl, '--api-key', 'e2e-reader-key-00001', '--format', format, '--decision', 'deny'], {
        env: cleanEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      await vi.waitFor(() => expect(err).toContain('# live'), { timeout: 30_000, interval: 50 });
      await traffic(6);
      await vi.waitFor(() => expect(out.split('\n').filter(Boolean)).toHaveLength(2), { timeout: 30_000, interval: 50 });
      const lines = out.trim().split('\n');
      if (format === 'text') {
        for (const line of lines) expect(line).toMatch(/^\S+Z e2e-bot run_sql pre deny block-drop \d+\.\d+m?s$/);
      } else {
        for (const line of lines) expect(JSON.parse(line)).toMatchObject({ agent_name: 'e2e-bot', decision: 'deny', matches: [{ control_name: 'block-drop' }] });
      }
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    }
  });

  it('stops with a clear message when the key is missing', async () => {
    const result = spawnSync(process.execPath, [MAIN, 'tui', '--server', baseUrl], { env: cleanEnv(), encoding: 'utf8', timeout: 15_000 });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/refused the live stream \(HTTP 401\)/);
    expect(result.stderr).toMatch(/--api-key/);
  });
});
