/**
 * An agent process that inits the SDK and finishes its work must exit by itself: the
 * refresh and event timers may never keep it alive. This runs a real child process
 * against the SDK compiled to JavaScript (a small tsc build of src/sdk and what it imports).
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedSupportBot, startRealServer, type RunningServer } from './real-server.js';

const root = resolve(import.meta.dirname, '../..');
let buildDir = '';
let server: RunningServer;

beforeAll(async () => {
  // Inside the repository so that the child resolves node_modules (zod, re2).
  const cache = join(root, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  buildDir = mkdtempSync(join(cache, 'guardctl-sdk-child-'));
  await promisify(execFile)(
    process.execPath,
    [
      join(root, 'node_modules/typescript/bin/tsc'), '--outDir', buildDir, '--rootDir', root, '--strict',
      '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--skipLibCheck',
      '--types', 'node', '--esModuleInterop', join(root, 'src/sdk/index.ts'),
    ],
    { cwd: root },
    // Type errors in code being written elsewhere still emit JavaScript; a missing output fails the tests below.
  ).catch(() => undefined);
  writeFileSync(join(buildDir, 'package.json'), '{"type":"module"}');
  server = await startRealServer();
  await seedSupportBot(server.client);
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (buildDir) rmSync(buildDir, { recursive: true, force: true });
});

function runChild(script: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  const file = join(buildDir, 'child.mjs');
  writeFileSync(file, script);
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [file], { env: { ...process.env, GUARD_URL: server.url }, cwd: root });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    // A process kept alive by a timer would hang; the guard is generous and only stops a stuck child.
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      resolveRun({ code, signal, out });
    });
  });
}

describe('process lifetime', () => {
  it('exits after init and a check without shutdown (refresh and event timers are unref\'d)', async () => {
    const result = await runChild(`
      import { init } from './src/sdk/index.js';
      const agent = await init({ agentName: 'support-bot', serverUrl: process.env.GUARD_URL, refreshIntervalSeconds: 60 });
      const r = await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
      console.log('decision', r.decision, 'pending', agent.pendingEvents);
    `);
    expect(result.out).toContain('decision allow pending 2');
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
  });

  it('exits after init and a check without shutdown with events posted from a thread (eventThread)', async () => {
    const result = await runChild(`
      import { init } from './src/sdk/index.js';
      const agent = await init({ agentName: 'support-bot', serverUrl: process.env.GUARD_URL, eventThread: true, eventBatchSize: 2 });
      await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
      // The full batch goes out from the thread; then nothing is left to keep the process.
      while (agent.pendingEvents > 0) await new Promise((r) => setTimeout(r, 10));
      console.log('pending', agent.pendingEvents);
    `);
    expect(result.out).toContain('pending 0');
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
  });

  // pending 0 after shutdown: the server acknowledged every event (a failed send keeps them pending).
  it('exits after shutdown with eventThread, having delivered its events', async () => {
    const result = await runChild(`
      import { init } from './src/sdk/index.js';
      const agent = await init({ agentName: 'support-bot', serverUrl: process.env.GUARD_URL, eventThread: true });
      await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
      await agent.shutdown();
      console.log('pending', agent.pendingEvents);
    `);
    expect(result.out).toContain('pending 0');
    expect(result.code).toBe(0);
  });

  it('exits after shutdown, having delivered its events', async () => {
    const result = await runChild(`
      import { init } from './src/sdk/index.js';
      const agent = await init({ agentName: 'support-bot', serverUrl: process.env.GUARD_URL });
      await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
      await agent.shutdown();
      console.log('pending', agent.pendingEvents);
    `);
    expect(result.out).toContain('pending 0');
    expect(result.code).toBe(0);
  });
});
