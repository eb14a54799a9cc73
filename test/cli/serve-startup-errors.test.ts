/**
 * `guardctl serve`'s ordinary start-up mistakes, in-process (runCliInProcess): each is one
 * line on stderr naming the flag or variable and what to do, exit code 1, no stack trace.
 * The binary itself failing to start that way, and starting with its warnings, is
 * test/e2e/startup-errors.test.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgRequired, pgSuiteTitle, pgUnreachable, pgUrl, skipReasonOf } from '../replicas/pg.js';
import { runCliInProcess } from '../support/cli-in-process.js';
import { oneLineError } from '../support/cli-scenarios.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-startup-'));
  mkdirSync(join(dir, 'a-directory'));
  writeFileSync(join(dir, 'a-file'), 'not a directory');
  writeFileSync(join(dir, 'notes.txt'), 'these are notes, not a SQLite database\n'.repeat(200));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `guardctl serve ARGS` (it must stop by itself) and checks the one-line error. */
async function failedStart(args: string[], env: Record<string, string> = {}) {
  const run = await runCliInProcess(['serve', '--host', '127.0.0.1', '--port', '0', ...args], { cwd: dir, env });
  return oneLineError(run);
}

describe('guardctl serve start-up mistakes', () => {
  it('a database file whose directory cannot be made', async () => {
    expect(await failedStart(['--db', 'a-file/guard.db'])).toBe(
      'error: cannot create the directory of the database file a-file/guard.db (--db), a file is in the way: choose another file, for example --db .guardctl/guardctl.db',
    );
  });

  it('a file that is not a SQLite database', async () => {
    expect(await failedStart(['--db', 'notes.txt'])).toMatch(/^error: notes\.txt is not a SQLite database \(--db\): /);
  });

  it('a database URL of another kind, without echoing its password', async () => {
    const line = await failedStart(['--db', 'mysql://app:s3cret@db.example.com/app']);
    expect(line).toBe('error: --db names a mysql:// database, which guardctl cannot use: use a SQLite file path (or sqlite:<path>, :memory:) or a postgres:// URL (docs/deployment.md)');
    expect(await failedStart([], { DB_URL: 'mysql://app:s3cret@db.example.com/app' })).toMatch(/^error: DB_URL names a mysql:\/\/ database/);
    expect(line).not.toContain('s3cret');
  });

  it('PostgreSQL not running there', async () => {
    // Port 1 on this machine: nothing listens, the connection is refused at once.
    expect(await failedStart([], { DATABASE_URL: 'postgres://guard:s3cret@127.0.0.1:1/guard' })).toBe(
      'error: cannot connect to PostgreSQL at 127.0.0.1:1, connection refused (DATABASE_URL): start PostgreSQL, or correct the host and port in DATABASE_URL',
    );
  });

  it('a port in use', async () => {
    const holder: Server = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as { port: number };
    try {
      const run = await runCliInProcess(['serve', '--host', '127.0.0.1', '--port', String(port), '--db', ':memory:'], { cwd: dir });
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `error: port ${port} on 127.0.0.1 is already in use (--port): stop the process that holds it (another guardctl serve?) or choose another port, for example --port 8000 (0 picks a free one)\n`,
      );
    } finally {
      holder.close();
    }
  });

  it('a listen address this machine does not have, and a bad port', async () => {
    // 192.0.2.0/24 is reserved for documentation: never an address of this machine.
    expect(await failedStart(['--db', ':memory:', '--host', '192.0.2.1'])).toMatch(/^error: 192\.0\.2\.1 is not an address of this machine \(--host\): listen on 127\.0\.0\.1/);
    const run = await runCliInProcess(['serve', '--port', 'eighty'], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('error: --port must be a whole number from 0 to 65535, got "eighty"\n');
  });

  it('a watched directory that does not exist', async () => {
    expect(await failedStart(['--db', ':memory:', '--watch', 'no-such-controls'])).toBe(
      'error: --watch no-such-controls: no such directory: create it, or point --watch at the directory that holds your *.yaml control files',
    );
  });

  it('an API key shorter than 16 characters stops the start with one line naming the variable, never the key', async () => {
    const line = await failedStart(['--db', ':memory:'], { GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: 'ab' });
    expect(line).toBe('error: GUARD_ADMIN_API_KEYS holds a key of 2 characters (entry 1): keys must be at least 16 characters; generate one with: openssl rand -hex 32');
  });
});

const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));
describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('start-up mistakes with PostgreSQL', unreachable), () => {
  it('a database that does not exist on a running PostgreSQL', async () => {
    const url = new URL(pgUrl);
    url.pathname = '/no_such_guardctl_database';
    expect(await failedStart(['--db', url.toString()])).toBe(
      `error: PostgreSQL at ${url.hostname}:${url.port || '5432'} has no database "no_such_guardctl_database" (--db): create it (createdb -h ${url.hostname} no_such_guardctl_database) or name an existing database in --db`,
    );
  });
});
