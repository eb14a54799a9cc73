import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Runs the built binary (npm test builds first): `node dist/cli/main.js serve --watch DIR`.
const MAIN = join(import.meta.dirname, '../../dist/cli/main.js');

function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(GUARD_|DATABASE_URL|DB_URL|PORT|HOST|OBSERVABILITY_)/.test(name)) delete env[name];
  }
  return { ...env, OBSERVABILITY_ENABLED: 'false' };
}

function control(decision: string): string {
  return [
    'kind: Control',
    'name: block-drop',
    'scope: { step_types: [tool], stages: [pre] }',
    'selector: { path: input.query }',
    "evaluator: { name: regex, config: { pattern: '(?i)drop\\s+table' } }",
    `action: { decision: ${decision} }`,
    '---',
    'kind: Agent',
    'agent_name: e2e-bot',
    'controls: [block-drop]',
    '',
  ].join('\n');
}

let root: string;
let dir: string;
let child: ChildProcess;
let baseUrl: string;
let stderr = '';

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'guardctl-e2e-watch-'));
  dir = join(root, 'controls');
  mkdirSync(dir);
  writeFileSync(join(dir, 'sql.yaml'), control('deny'));
  child = spawn(process.execPath, [MAIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', join(root, 'guard.db'), '--watch', dir], {
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
  rmSync(root, { recursive: true, force: true });
});

async function decision(): Promise<string> {
  const res = await fetch(`${baseUrl}/api/v1/evaluation`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ agent_name: 'e2e-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } } }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { decision: string }).decision;
}

async function status(): Promise<{ state: string; errors: Array<{ file: string; line: number; column: number }> }> {
  const res = await fetch(`${baseUrl}/api/v1/reload/status`);
  expect(res.status).toBe(200);
  return (await res.json()) as { state: string; errors: Array<{ file: string; line: number; column: number }> };
}

describe('guardctl serve --watch (built binary, real HTTP, real watcher)', () => {
  it('serves the directory, follows edits, keeps the last good set on an invalid edit and recovers', async () => {
    expect(await decision()).toBe('deny');

    writeFileSync(join(dir, 'sql.yaml'), control('allow'));
    await expect.poll(decision, { timeout: 10_000, interval: 20 }).toBe('allow');

    writeFileSync(join(dir, 'sql.yaml'), 'kind: Control\nname: block-drop\nscope: [oops\n');
    await expect.poll(async () => (await status()).state, { timeout: 10_000, interval: 20 }).toBe('error');
    const bad = await status();
    expect(bad.errors.some((e) => e.file === join(dir, 'sql.yaml') && e.line >= 1 && e.column >= 1)).toBe(true);
    expect(await decision()).toBe('allow');

    writeFileSync(join(dir, 'sql.yaml'), control('deny'));
    await expect.poll(async () => (await status()).state, { timeout: 10_000, interval: 20 }).toBe('ok');
    expect(await decision()).toBe('deny');
  });

  it('refuses to start on an invalid directory, printing file:line:column and exiting 1', async () => {
    const badDir = join(root, 'bad');
    mkdirSync(badDir);
    writeFileSync(join(badDir, 'x.yaml'), 'kind: Control\nname: x\naction: [\n');
    const run = spawn(process.execPath, [MAIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', ':memory:', '--watch', badDir], {
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    run.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => run.once('exit', resolve));
    expect(code).toBe(1);
    expect(err).toMatch(new RegExp(`${badDir}/x\\.yaml:\\d+:\\d+`));
    expect(err).toContain('hint:');
  });
});
