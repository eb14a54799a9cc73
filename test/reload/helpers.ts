import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';
import type { ReloadNotice } from '../../src/model/index.js';
import type { HotReload, ReloadStatus } from '../../src/reload/index.js';
import type { AssembledServer } from '../../src/server/assemble.js';
import type { Store } from '../../src/store/types.js';
import { startTestServer } from '../support/server.js';

export interface WatchedServer {
  dir: string;
  app: FastifyInstance;
  store: Store;
  hot: HotReload;
  /** Every reload notice the live stream published, in order. */
  notices: ReloadNotice[];
  write(file: string, text: string): void;
  close(): Promise<void>;
}

/** A temp directory holding `files`, for a watched server or a failing start. */
export function tempControlsDir(files: Record<string, string>): { root: string; dir: string } {
  const root = mkdtempSync(join(tmpdir(), 'guardctl-reload-'));
  const dir = join(root, 'controls');
  mkdirSync(dir);
  for (const [file, text] of Object.entries(files)) writeIn(dir, file, text);
  return { root, dir };
}

export function writeIn(dir: string, file: string, text: string): void {
  mkdirSync(dirname(join(dir, file)), { recursive: true });
  writeFileSync(join(dir, file), text);
}

/** Real app, real SQLite file, real watcher on a real temp directory. */
export async function startWatchedServer(files: Record<string, string>): Promise<WatchedServer> {
  const { root, dir } = tempControlsDir(files);
  let server: AssembledServer;
  try {
    server = await startTestServer({
      env: { OBSERVABILITY_ENABLED: 'false' },
      config: { watchDir: dir, databaseUrl: join(root, 'guard.db') },
      observability: {},
      watch: { debounceMs: 30 },
    });
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  // Hot reload publishes each reload through observability (the live stream and metrics): keep a copy.
  const notices: ReloadNotice[] = [];
  const observability = server.observability!;
  const publish = observability.publishReload.bind(observability);
  observability.publishReload = (notice) => {
    notices.push(notice);
    publish(notice);
  };
  return {
    dir,
    app: server.app,
    store: server.store,
    hot: server.hotReload!,
    notices,
    write: (file, text) => writeIn(dir, file, text),
    async close() {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

export async function statusOf(app: FastifyInstance): Promise<ReloadStatus> {
  const res = await app.inject({ method: 'GET', url: '/api/v1/reload/status' });
  if (res.statusCode !== 200) throw new Error(`status: ${res.statusCode} ${res.body}`);
  return JSON.parse(res.body) as ReloadStatus;
}

/** Polls the status endpoint until `ok` holds (no fixed sleeps); a timeout shows the last status. */
export async function waitForStatus(app: FastifyInstance, ok: (s: ReloadStatus) => boolean, what: string): Promise<ReloadStatus> {
  let last: ReloadStatus | undefined;
  await expect.poll(async () => (last = await statusOf(app)), { interval: 20, message: `waiting for ${what}` }).toSatisfy(ok);
  return last!;
}

/** Waits for one more successful (or failed) reload than `before` counted. */
export function waitForReload(app: FastifyInstance, before: ReloadStatus, result: 'success' | 'failure'): Promise<ReloadStatus> {
  return waitForStatus(app, (s) => s.reloads[result] > before.reloads[result], `a ${result} reload`);
}

export async function decide(app: FastifyInstance, agent: string, query: string): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/evaluation',
    payload: { agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query } } },
  });
  if (res.statusCode !== 200) throw new Error(`evaluation: ${res.statusCode} ${res.body}`);
  return (JSON.parse(res.body) as { decision: string }).decision;
}

export function sqlControl(name: string, pattern: string, decision = 'deny'): string {
  return [
    'kind: Control',
    `name: ${name}`,
    'scope:',
    '  step_types: [tool]',
    '  stages: [pre]',
    'selector:',
    '  path: input.query',
    'evaluator:',
    '  name: regex',
    '  config:',
    `    pattern: '${pattern}'`,
    'action:',
    `  decision: ${decision}`,
    '',
  ].join('\n');
}

export function agentDoc(name: string, controls: string[]): string {
  return ['kind: Agent', `agent_name: ${name}`, `controls: [${controls.join(', ')}]`, ''].join('\n');
}
