// The built CLI killed between two batches of an apply (a cancelled CI job): every agent
// keeps all of its old controls or all of its new ones, and its always-deny control denies.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GuardClient } from '../../src/client/index.js';
import { applyToServer, planAgainstServer } from '../../src/gitops/sync.js';
import type { ServerHandle } from '../../src/server/start.js';
import { AGENTS, generation, generationText, unguarded } from '../gitops/generations.js';
import { startTestServer } from '../gitops/server.js';
import { cleanEnv, MAIN, requireBuiltBinary } from './serve-process.js';

/**
 * Forwards requests to `target`; the `killAt`-th `POST /changes` is never forwarded:
 * `onHeld` runs instead (it kills the CLI), so exactly the batches before it committed.
 */
function startProxy(target: string): Promise<{ url: string; server: Server; arm(killAt: number, onHeld: () => void): void }> {
  let changes = 0;
  let killAt = Infinity;
  let onHeld = () => {};
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/api/v1/changes' && ++changes >= killAt) {
        onHeld();
        return; // never answered: the client dies waiting
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers[k] = v;
      void fetch(`${target}${req.url}`, { method: req.method, headers, ...(chunks.length ? { body: Buffer.concat(chunks) } : {}) }).then(async (answer) => {
        res.writeHead(answer.status, Object.fromEntries([...answer.headers].filter(([k]) => k !== 'content-encoding' && k !== 'content-length' && k !== 'transfer-encoding')));
        res.end(Buffer.from(await answer.arrayBuffer()));
      });
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        server,
        arm(at, held) {
          changes = 0;
          killAt = at;
          onHeld = held;
        },
      }),
    ),
  );
}

let work: string;
let server: ServerHandle;
let client: GuardClient;

beforeAll(async () => {
  requireBuiltBinary();
  work = mkdtempSync(join(tmpdir(), 'guardctl-killed-'));
  server = await startTestServer();
  client = new GuardClient({ serverUrl: server.url, timeoutMs: 20_000 });
});
afterAll(async () => {
  await server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('a CLI killed in the middle of an apply', () => {
  it('leaves every agent with all of its old or all of its new controls, whichever batch it dies before', { timeout: 180_000 }, async () => {
    const perAgent = 100;
    // The reset applies the old generation as if from the directory the CLI applies, so the
    // CLI's --prune deletes it (it keeps controls another directory defined).
    const oldGen = generation('old', perAgent, work);
    const newGen = generation('new', perAgent, work);
    writeFileSync(join(work, 'new.yaml'), generationText('new', perAgent));
    const proxy = await startProxy(server.url);
    try {
      // 303 controls renamed: 1,212 operations, at most 250 a request.
      for (const killAt of [2, 3, 4, 5]) {
        const reset = await applyToServer(client, await planAgainstServer(client, oldGen, { prune: true }));
        expect(reset.failed).toBeNull();
        const child = spawn(process.execPath, [MAIN, 'apply', work, '--prune', '--auto-approve'], {
          env: cleanEnv({ GUARD_URL: proxy.url }),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        child.stdout.on('data', (c: Buffer) => (output += c.toString()));
        child.stderr.on('data', (c: Buffer) => (output += c.toString()));
        const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
        proxy.arm(killAt, () => child.kill('SIGKILL'));
        expect(await exited, output).toBe('SIGKILL');

        const links = new Map<string, string[]>();
        for (const agent of AGENTS) links.set(agent, ((await client.getAgent(agent)).controls ?? []).map((c) => c.name));
        expect(unguarded(links, oldGen, newGen), `killed before batch ${killAt}`).toEqual([]);
        for (const agent of AGENTS) {
          const result = await client.evaluate({ agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'run', input: 'x' } });
          expect(result.decision, `${agent}, killed before batch ${killAt}`).toBe('deny');
        }
      }
    } finally {
      proxy.server.closeAllConnections();
      await new Promise((resolve) => proxy.server.close(resolve));
    }
  });
});
