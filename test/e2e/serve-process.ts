/**
 * The built binary in tests: `node dist/cli/main.js serve` on 127.0.0.1 port 0, started
 * with a clean environment, its URL read from the "guardctl listening on URL" line.
 * The e2e project's globalSetup (test/support/build-once.ts) builds first when a source
 * changed after the last build; GUARDCTL_MAIN may point at another build.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { TEST_POOL_SIZE } from '../replicas/pg.js';

export const MAIN = process.env.GUARDCTL_MAIN ?? join(import.meta.dirname, '../../dist/cli/main.js');

/** Fails with the command to run when the binary is missing (a GUARDCTL_MAIN that names no file). */
export function requireBuiltBinary(): void {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build (the e2e project builds by itself unless GUARDCTL_MAIN is set)`);
}

// Settings of the machine running the tests that would change what a child does: guardctl's
// own variables, the server's database and listen address, colour forcing, and CI (the
// dashboard prints event lines instead of drawing when CI is set).
const LEAKY = /^(GUARD_|DATABASE_URL$|DB_URL$|PORT$|HOST$|OBSERVABILITY_|FORCE_COLOR$|CI$|CONTINUOUS_INTEGRATION$)/;

/** The caller's environment without settings that would leak into a child, plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !LEAKY.test(name)) env[name] = value;
  return { ...env, ...extra };
}

export interface ServeOptions {
  /** DATABASE_URL for the server (a SQLite path or a postgres:// URL); unset means the default. */
  databaseUrl?: string;
  /** Arguments after `serve --host 127.0.0.1 --port 0`, e.g. ['--db', file, '--watch', dir]. */
  args?: string[];
  /** Added to the clean environment. */
  env?: Record<string, string>;
  cwd?: string;
  /** `--host` to pass; null passes none (HOST or the default decides). Default 127.0.0.1. */
  host?: string | null;
}

export interface ServeProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote so far, stdout and stderr interleaved. */
  output(): string;
  /** Only what it wrote to stderr. */
  stderr(): string;
  /** SIGTERM, then waits for the exit (SIGKILL after 5 s); resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `guardctl serve` and resolves once it listens; rejects with its output if it exits first. */
export async function startServeProcess(options: ServeOptions = {}): Promise<ServeProcess> {
  // A server on PostgreSQL gets the pool size of the other tests' stores (test/replicas/pg.ts).
  const database: Record<string, string> = options.databaseUrl === undefined ? {} : { DATABASE_URL: options.databaseUrl, GUARD_PG_POOL_SIZE: String(TEST_POOL_SIZE) };
  const env = cleanEnv({ ...database, ...options.env });
  const child = spawn(process.execPath, [MAIN, 'serve', ...(options.host === null ? [] : ['--host', options.host ?? '127.0.0.1']), '--port', '0', ...(options.args ?? [])], {
    cwd: options.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    err += chunk.toString();
  });
  // Recorded once for both the start and stop(), so an exit is never missed between listeners.
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const match = /guardctl listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (match) {
        child.stdout.off('data', onData);
        resolve(match[1]!);
      }
    };
    child.stdout.on('data', onData);
    void exited.then((code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  return {
    url,
    child,
    output: () => out,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.kill('SIGTERM');
        await exited;
        clearTimeout(kill);
      }
      return exited;
    },
  };
}

/** One JSON request (a write says JSON even without a body, as the server requires); the body parsed (null when empty). */
export async function send(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined && method === 'GET' ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
}
