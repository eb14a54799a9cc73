// The built binary loads only the command it runs (cli/program.ts), and a reader that
// closes stdout early ends it quietly.
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/version.js';
import { runCli } from './run-cli.js';
import { cleanEnv, MAIN, requireBuiltBinary } from './serve-process.js';

beforeAll(() => requireBuiltBinary());

describe('guardctl startup', () => {
  it('--version answers with the version alone', async () => {
    const run = await runCli(['--version'], { cwd: tmpdir() });
    expect(run).toEqual({ code: 0, stdout: `${packageVersion()}\n`, stderr: '' });
  });

  it('the program help lists every command, even with a command named after --help', async () => {
    for (const args of [['--help'], ['--help', 'plan']]) {
      const run = await runCli(args, { cwd: tmpdir() });
      expect(run.code).toBe(0);
      for (const name of ['serve', 'tui', 'validate', 'plan', 'apply', 'export', 'schema', 'test', 'shadow-report', 'history', 'approvals', 'completion', 'mcp-proxy']) {
        expect(run.stdout).toMatch(new RegExp(`^  ${name} `, 'm'));
      }
    }
  });

  it("one command's help is that command's", async () => {
    const run = await runCli(['plan', '--help'], { cwd: tmpdir() });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: guardctl plan \[options\] \[dir\]/);
  });

  it('a mistyped command still gets a suggestion from the full list', async () => {
    const run = await runCli(['plna'], { cwd: tmpdir() });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("unknown command 'plna'");
    expect(run.stderr).toContain('plan');
  });

  it('stdout closed by its reader before anything is written: exit 0, no stack trace', async () => {
    const child = spawn(process.execPath, [MAIN, 'schema'], { env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    // Closed at once: the schema (tens of KB) is written to a pipe nobody reads.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
