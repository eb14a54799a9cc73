import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

// The built binary (npm test builds first): `node dist/cli/main.js serve`.
const MAIN = join(import.meta.dirname, '../../dist/cli/main.js');

export interface ServeProcess {
  url: string;
  output(): string;
  /** SIGTERM, then waits for the exit (SIGKILL after 5 s). */
  stop(): Promise<void>;
}

/** Environment without the caller's guardctl settings, so only what a test sets applies. */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (/^(GUARD_|DATABASE_URL|DB_URL|PORT|HOST|OBSERVABILITY_)/.test(name)) delete env[name];
  }
  return { ...env, ...extra };
}

export async function startServeProcess(databaseUrl: string, env: Record<string, string> = {}): Promise<ServeProcess> {
  const child: ChildProcess = spawn(process.execPath, [MAIN, 'serve', '--host', '127.0.0.1', '--port', '0'], {
    env: cleanEnv({ DATABASE_URL: databaseUrl, ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = () => {
      const match = /guardctl listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (match) {
        child.stdout!.off('data', onData);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  return {
    url,
    output: () => out,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

export async function send(base: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
}
