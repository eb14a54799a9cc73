/**
 * An agent process that inits the SDK and finishes its work must exit by itself: the
 * refresh and event timers may never keep it alive. This runs a real child process
 * against the SDK package as built (packages/sdk/dist), the JavaScript users install.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedSupportBot, startRealServer, type RunningServer } from '../sdk/real-server.js';

const root = resolve(import.meta.dirname, '../..');
const SDK = pathToFileURL(join(root, 'packages/sdk/dist/sdk/index.js')).href;
let childDir = '';
let server: RunningServer;

beforeAll(async () => {
  childDir = mkdtempSync(join(tmpdir(), 'guardctl-sdk-child-'));
  server = await startRealServer();
  await seedSupportBot(server.client);
});

afterAll(async () => {
  await server?.close();
  if (childDir) rmSync(childDir, { recursive: true, force: true });
});

function runChild(script: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  const file = join(childDir, 'child.mjs');
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
      import { init } from '${SDK}';
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
      import { init } from '${SDK}';
      const agent = await init({ agentName: 'support-bot', serverUrl: process.env.GUARD_URL, eventThread: true, eventBatchSize: 2, eventFlushIntervalSeconds: 0.2 });
      await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
      // Its non-matches, rolled up, go out from the thread at the next flush; then nothing is left to keep the process.
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
      import { init } from '${SDK}';
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
      import { init } from '${SDK}';
      const agent = await init({ agentName: 'support-bot', serverUrl: process.env.GUARD_URL });
      await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
      await agent.shutdown();
      console.log('pending', agent.pendingEvents);
    `);
    expect(result.out).toContain('pending 0');
    expect(result.code).toBe(0);
  });
});
