/**
 * The conveniences a Terraform or kubectl user reaches for, through the built binary: colour
 * off with --no-color or NO_COLOR, apply asking on a terminal (and never without one), and
 * a failure as JSON, the schema as YAML and a completion script once each. What those three
 * print in every case is tested in-process: test/cli/conveniences.test.ts.
 * A terminal is a real pseudo-terminal: util-linux `script` runs the command in one.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shellWord } from '../../src/gitops/refusal.js';
import { runCli, type CliRun } from './run-cli.js';
import { cleanEnv, MAIN, requireBuiltBinary, startServeProcess, type ServeProcess } from './serve-process.js';

const repo = join(import.meta.dirname, '../..');
let work: string;
let server: ServeProcess;

beforeAll(async () => {
  requireBuiltBinary();
  if (spawnSync('script', ['--version']).status !== 0) throw new Error('util-linux "script" is needed to give the CLI a terminal: install it (apt-get install -y bsdutils)');
  work = mkdtempSync(join(tmpdir(), 'guardctl-e2e-conveniences-'));
  cpSync(join(repo, 'test/fixtures/example-controls'), join(work, 'controls'), { recursive: true });
  server = await startServeProcess({ args: ['--db', ':memory:'], cwd: work, env: { OBSERVABILITY_ENABLED: 'false' } });
});

afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { cwd: work, env: { GUARD_URL: server.url, ...env } });

/** The binary with a terminal on stdin and stdout; `input` is typed into it. */
function inTerminal(args: string[], input: string, env: Record<string, string> = {}): Promise<CliRun> {
  const command = [process.execPath, MAIN, ...args].map(shellWord).join(' ');
  return new Promise((resolve) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: work, env: cleanEnv({ GUARD_URL: server.url, TERM: 'xterm', ...env }) });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stdin.end(input);
    child.once('exit', (code) => resolve({ code: code ?? 99, stdout, stderr: '' }));
  });
}

/** An SGR escape (colour, bold, ...); built from the ESC character, which lint keeps out of literals. */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[\\d+m`);
const controlNames = async () => ((await (await fetch(`${server.url}/api/v1/controls?limit=100`)).json()) as { controls: Array<{ name: string }> }).controls.map((c) => c.name);

describe('guardctl conveniences (built binary)', () => {
  it('colours a terminal unless --no-color or NO_COLOR says not to', async () => {
    expect((await inTerminal(['plan', 'controls'], '')).stdout).toMatch(ANSI);
    expect((await inTerminal(['plan', 'controls', '--no-color'], '')).stdout).not.toMatch(ANSI);
    expect((await inTerminal(['--no-color', 'validate', 'controls'], '')).stdout).not.toMatch(ANSI);
    expect((await inTerminal(['plan', 'controls'], '', { NO_COLOR: '1' })).stdout).not.toMatch(ANSI);
  });

  it('apply shows the plan and asks on a terminal; only "yes" applies', { timeout: 60_000 }, async () => {
    const declined = await inTerminal(['apply', 'controls', '--no-color'], 'no\n');
    expect(declined.stdout).toContain('+ create control "block-destructive-sql"');
    expect(declined.stdout).toMatch(/Apply these 24 changes to http:\/\/127\.0\.0\.1:\d+\? Only "yes" applies: /);
    expect(declined.stdout).toContain('error: apply cancelled: nothing was changed');
    expect(declined.code).toBe(1);
    expect(await controlNames()).toEqual([]);

    const accepted = await inTerminal(['apply', 'controls', '--no-color'], 'yes\n');
    expect(accepted.stdout).toContain('✓ applied 24 operation(s)');
    expect(accepted.code).toBe(0);
    expect(await controlNames()).toContain('block-destructive-sql');

    // Nothing to do: nothing to ask.
    const settled = await inTerminal(['apply', 'controls', '--no-color'], '');
    expect(settled.stdout).not.toContain('Only "yes"');
    expect(settled.stdout).toContain('nothing to do');
  });

  it('never asks without a terminal, in CI, or with --auto-approve', { timeout: 60_000 }, async () => {
    const remove = async (name: string) => {
      const list = (await (await fetch(`${server.url}/api/v1/controls?limit=100`)).json()) as { controls: Array<{ control_id: number; name: string }> };
      const id = list.controls.find((c) => c.name === name)?.control_id;
      if (id !== undefined) await fetch(`${server.url}/api/v1/controls/${id}`, { method: 'DELETE' });
    };
    await remove('warn-shell-rm-rf');
    const piped = await cli(['apply', 'controls']);
    expect(piped.code).toBe(0);
    expect(piped.stdout + piped.stderr).not.toContain('Only "yes"');
    expect(await controlNames()).toContain('warn-shell-rm-rf');

    for (const [args, env] of [[['--auto-approve'], {}], [[], { CI: 'true' }]] as const) {
      await remove('warn-shell-rm-rf');
      const run = await inTerminal(['apply', 'controls', ...args], '', env);
      expect(run.stdout).not.toContain('Only "yes"');
      expect(run.code).toBe(0);
      expect(await controlNames()).toContain('warn-shell-rm-rf');
    }
  });

  it('a failure as JSON, the schema as YAML and a completion script, through the binary', async () => {
    const missing = await cli(['plan', 'no-such-dir', '--format', 'json']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ version: 1, error: { message: 'no-such-dir: no such file or directory', exit_code: 1 } });
    const yaml = await cli(['schema', '--format', 'yaml']);
    expect(yaml.code).toBe(0);
    expect(parseYaml(yaml.stdout)).toMatchObject({ $schema: expect.any(String) });
    const bash = await cli(['completion', 'bash']);
    expect(bash.code).toBe(0);
    expect(bash.stdout).toMatch(/^# guardctl completion for bash/);
  });
});
