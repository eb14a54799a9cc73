import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, MAIN, startServeProcess, type ServeProcess } from './serve-process.js';

// The built binary: `node dist/cli/main.js serve --watch DIR`.
const env = { OBSERVABILITY_ENABLED: 'false' };

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
let server: ServeProcess;
let baseUrl: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'guardctl-e2e-watch-'));
  dir = join(root, 'controls');
  mkdirSync(dir);
  writeFileSync(join(dir, 'sql.yaml'), control('deny'));
  server = await startServeProcess({ args: ['--db', join(root, 'guard.db'), '--watch', dir], env });
  baseUrl = server.url;
});

afterAll(async () => {
  await server?.stop();
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
    await expect.poll(decision, { timeout: 30_000, interval: 20 }).toBe('allow');

    writeFileSync(join(dir, 'sql.yaml'), 'kind: Control\nname: block-drop\nscope: [oops\n');
    await expect.poll(async () => (await status()).state, { timeout: 30_000, interval: 20 }).toBe('error');
    const bad = await status();
    expect(bad.errors.some((e) => e.file === join(dir, 'sql.yaml') && e.line >= 1 && e.column >= 1)).toBe(true);
    expect(await decision()).toBe('allow');

    writeFileSync(join(dir, 'sql.yaml'), control('deny'));
    await expect.poll(async () => (await status()).state, { timeout: 30_000, interval: 20 }).toBe('ok');
    expect(await decision()).toBe('deny');

    // The log, in human lines: the start, each reload, the failure with its problem
    // below it (the path said once), and the recovery.
    await expect.poll(() => server.output(), { timeout: 30_000 }).toContain('hot reload recovered');
    const time = '\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z';
    const lines = server.output().trimEnd().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^${time} INFO  guardctl listening on http://127\\.0\\.0\\.1:\\d+ \\(database: .*\\), watching ${dir} \\(revision [0-9a-f]{12}\\)$`));
    const failed = lines.findIndex((l) => l.includes('hot reload failed'));
    expect(lines[failed]).toMatch(new RegExp(`^${time} WARN  hot reload failed \\(\\d+ errors?\\); still serving revision [0-9a-f]{12}  dir=`));
    expect(lines[failed + 1]).toMatch(new RegExp(`^    ${join(dir, 'sql.yaml')}:\\d+:\\d+`));
    expect(lines.at(-1)).toMatch(new RegExp(`^${time} INFO  hot reload recovered: revision [0-9a-f]{12} \\(1 change\\); the directory is valid again`));
    expect(lines.every((l) => !l.startsWith('{'))).toBe(true);
  });

  it('logs JSON lines, every one, with --log-format json', async () => {
    const jsonDir = join(root, 'json');
    mkdirSync(jsonDir);
    writeFileSync(join(jsonDir, 'sql.yaml'), control('deny'));
    const json = await startServeProcess({ args: ['--db', ':memory:', '--watch', jsonDir, '--log-format', 'json'], env });
    try {
      writeFileSync(join(jsonDir, 'sql.yaml'), 'kind: Control\nname: block-drop\nscope: [oops\n');
      await expect.poll(() => json.output(), { timeout: 30_000 }).toContain('hot reload failed');
      const records = json.output().trimEnd().split('\n').map((l) => JSON.parse(l) as { level: number; msg: string; errors?: string[] });
      expect(records[0]).toMatchObject({ level: 30, msg: expect.stringMatching(/^guardctl listening on http:/) });
      const failed = records.find((r) => r.msg.startsWith('hot reload failed'))!;
      expect(failed.level).toBe(40);
      expect(failed.errors?.[0]).toMatch(new RegExp(`^${join(jsonDir, 'sql.yaml')}:\\d+:\\d+`));
    } finally {
      await json.stop();
    }
  });

  it('refuses to start on an invalid directory, printing file:line:column and exiting 1', async () => {
    const badDir = join(root, 'bad');
    mkdirSync(badDir);
    writeFileSync(join(badDir, 'x.yaml'), 'kind: Control\nname: x\naction: [\n');
    const run = spawn(process.execPath, [MAIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--db', ':memory:', '--watch', badDir], {
      env: cleanEnv(env),
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
