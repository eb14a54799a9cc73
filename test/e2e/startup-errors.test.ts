/**
 * `guardctl serve` through the built binary: a start-up mistake is one line on stderr, exit
 * code 1, no stack trace; a start warns when it listens beyond this machine with API keys off
 * and says when it created the database file. The other start-up mistakes are tested
 * in-process: test/cli/serve-startup-errors.test.ts.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { requireBuiltBinary, startServeProcess } from './serve-process.js';
import { oneLineError } from '../support/cli-scenarios.js';

let dir: string;
beforeAll(() => {
  requireBuiltBinary();
  dir = mkdtempSync(join(tmpdir(), 'guardctl-e2e-startup-'));
  mkdirSync(join(dir, 'a-directory'));
  writeFileSync(join(dir, 'a-file'), 'not a directory');
  writeFileSync(join(dir, 'notes.txt'), 'these are notes, not a SQLite database\n'.repeat(200));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `guardctl serve ARGS` (it must stop by itself) and checks the one-line error. */
async function failedStart(args: string[], env: Record<string, string> = {}) {
  const run = await runCli(['serve', '--host', '127.0.0.1', '--port', '0', ...args], { cwd: dir, env });
  return oneLineError(run);
}

describe('guardctl serve start-up mistakes (built binary)', () => {
  it('a directory given as the database file', async () => {
    expect(await failedStart(['--db', 'a-directory'])).toBe(
      'error: a-directory is a directory, not a database file (--db): name a file in it, for example --db a-directory/guardctl.db',
    );
    expect(await failedStart([], { DATABASE_URL: 'a-directory' })).toContain('(DATABASE_URL): name a file in it, for example DATABASE_URL=a-directory/guardctl.db');
  });

  // Through the binary: in-process, vitest's module loader words a missing module differently.
  it('an evaluator plugin that does not exist', async () => {
    const line = await failedStart(['--db', ':memory:'], { GUARD_EVALUATORS: './no-such-plugin.js' });
    expect(line).toBe(`error: cannot load evaluator plugin "./no-such-plugin.js" (${join(dir, 'no-such-plugin.js')}) (GUARD_EVALUATORS): Cannot find module '${join(dir, 'no-such-plugin.js')}': fix the module, or remove it from GUARD_EVALUATORS`);
  });

  it('warns at start when it listens beyond this machine with API keys off', async () => {
    const open = await startServeProcess({ cwd: dir, args: ['--db', ':memory:', '--host', '0.0.0.0'] });
    const local = await startServeProcess({ cwd: dir, args: ['--db', ':memory:'] });
    try {
      await expect.poll(() => open.output()).toMatch(/WARN {2}API keys are off and the server listens on 0\.0\.0\.0: anyone who can reach it can change its controls/);
      expect(local.output()).not.toContain('API keys are off');
    } finally {
      await open.stop();
      await local.stop();
    }
  });

  it('listens on 127.0.0.1 without HOST, and warns when HOST (not only --host) opens it with keys off', async () => {
    const local = await startServeProcess({ cwd: dir, host: null, args: ['--db', ':memory:'] });
    const open = await startServeProcess({ cwd: dir, host: null, args: ['--db', ':memory:'], env: { HOST: '0.0.0.0' } });
    const keyed = await startServeProcess({
      cwd: dir, host: null, args: ['--db', ':memory:'], env: { HOST: '0.0.0.0', GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: 'admin-key-for-the-e2e-test' },
    });
    try {
      expect(local.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(open.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
      await expect.poll(() => open.output()).toMatch(/WARN {2}API keys are off and the server listens on 0\.0\.0\.0/);
      expect(local.output()).not.toContain('API keys are off');
      expect(keyed.output()).not.toContain('API keys are off');
    } finally {
      await Promise.all([local.stop(), open.stop(), keyed.stop()]);
    }
  });

  it('a database file that does not exist yet is created, and the log says so', async () => {
    const server = await startServeProcess({ cwd: dir, args: ['--db', 'new/sub/guard.db'] });
    try {
      await expect.poll(() => server.output()).toMatch(/INFO {2}created a new database file new\/sub\/guard\.db/);
      expect(existsSync(join(dir, 'new/sub/guard.db'))).toBe(true);
    } finally {
      await server.stop();
    }
  });
});
