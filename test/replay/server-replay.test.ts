// Replay from a real server's recordings (in-process, 127.0.0.1, a free port), and the
// plan --replay output (markdown and JSON) produced by the command in-process.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runPlan } from '../../cli/commands/plan.js';
import { GuardClient } from '../../src/client/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments } from '../../src/gitops/load.js';
import { replayPlan } from '../../src/replay/index.js';
import type { ServerHandle } from '../../src/server/start.js';
import { startTestServer } from '../gitops/server.js';

const SERVER_CONTROLS = `kind: Control
name: no-drop
scope: { stages: [pre] }
selector: { path: input.query }
evaluator: { name: regex, config: { pattern: '(?i)drop' } }
action: { decision: deny }
---
kind: Agent
agent_name: bot
controls: [no-drop]
`;
// The pull request: DELETE becomes denied as well.
const PR_CONTROLS = `${SERVER_CONTROLS}---
kind: Control
name: no-delete
scope: { stages: [pre] }
selector: { path: input.query }
evaluator: { name: regex, config: { pattern: '(?i)delete' } }
action: { decision: deny }
`.replace('controls: [no-drop]', 'controls: [no-drop, no-delete]');

let server: ServerHandle;
let client: GuardClient;
const dir = mkdtempSync(join(tmpdir(), 'guardctl-replay-server-'));
const registry = createDefaultRegistry();

function load(text: string) {
  const loaded = loadDocuments([{ path: 'controls.yaml', text }], { validateControl: controlValidator(registry) });
  expect(loaded.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return loaded;
}

beforeAll(async () => {
  server = await startTestServer({ GUARD_RECORD_STEPS: 'true', OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '0.05' });
  client = new GuardClient({ serverUrl: server.url });
  // The server runs the current controls (what apply of SERVER_CONTROLS would make).
  const created = await client.createControl({ name: 'no-drop', data: load(SERVER_CONTROLS).controls[0]!.data });
  await client.initAgent({ agent_name: 'bot' });
  await client.link('bot', created.control_id);
  for (const query of ['SELECT 1', 'DELETE FROM a', 'DROP TABLE b', 'delete from c', 'SELECT 2']) {
    const r = await client.evaluate({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query } } });
    expect(r.decision).toBe(query.startsWith('DROP') ? 'deny' : 'allow');
  }
  await vi.waitFor(async () => expect((await client.listRecordings({ limit: 10 })).steps).toHaveLength(5), { timeout: 30_000 });
  writeFileSync(join(dir, 'controls.yaml'), PR_CONTROLS);
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('replay from the server', () => {
  it('re-evaluates the recorded steps against the server controls and the directory', async () => {
    const report = await replayPlan({ client, registry, loaded: load(PR_CONTROLS), source: true, limit: 100 });
    expect(report).toMatchObject({ total: 5, evaluated: 5, skipped: 0, unchanged: { allow: 2, deny: 1 } });
    expect(report.changes).toEqual([
      expect.objectContaining({ from: 'allow', to: 'deny', count: 2, controls: { 'no-delete': 2 } }),
    ]);
    expect(report.source).toBe(`${server.url}/api/v1/recordings`);
  });

  it('follows the cursor in small pages and stops at the limit', async () => {
    const report = await replayPlan({ client, registry, loaded: load(PR_CONTROLS), source: true, limit: 3 });
    expect(report.total).toBe(3);
    expect(report.warnings.some((w) => w.includes('--replay-limit 3'))).toBe(true);
  });
});

describe('guardctl plan --replay', () => {
  async function plan(args: Record<string, unknown>): Promise<{ code: number; out: string }> {
    const chunks: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      chunks.push(String(chunk));
      return true;
    });
    try {
      const code = await runPlan(dir, { server: server.url, owner: 'default', format: 'markdown', ...args } as never);
      return { code, out: chunks.join('') };
    } finally {
      spy.mockRestore();
    }
  }

  it('adds the replay section to the markdown plan', async () => {
    const { code, out } = await plan({ format: 'markdown', replay: true });
    expect(code).toBe(0);
    expect(out).toContain('### guardctl plan');
    expect(out).toContain('#### Replay of recorded traffic');
    expect(out).toContain('| would newly deny 2 of 5 steps (allow before) | 2 | no-delete (2) |');
    // What the control matched is masked in the example, as in the shadow report.
    expect(out).toContain('`{"query":"[MATCHED]"}`');
    expect(out).not.toContain('DELETE FROM a');
  });

  it('replays a JSON-lines file, with malformed lines counted, into the JSON plan', async () => {
    const file = join(dir, 'steps.jsonl');
    writeFileSync(file, [
      JSON.stringify({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DELETE 1' } } }),
      'not json',
      JSON.stringify({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'SELECT' } } }),
    ].join('\n'));
    const { out } = await plan({ format: 'json', replay: file });
    const body = JSON.parse(out) as { version: number; replay: { total: number; evaluated: number; skipped: number; warnings: string[]; changes: Array<{ count: number }> } };
    expect(body.version).toBe(1);
    expect(body.replay).toMatchObject({ total: 3, evaluated: 2, skipped: 1 });
    expect(body.replay.warnings[0]).toMatch(/^line 2: skipped/);
    expect(body.replay.changes[0]!.count).toBe(1);
  });

  it('says so when there is nothing to replay: a server that records nothing, one that has recorded nothing yet, an empty file', async () => {
    const quiet = await startTestServer({});
    const recordingButEmpty = await startTestServer({ GUARD_RECORD_STEPS: 'true' });
    try {
      const off = await plan({ format: 'text', replay: true, server: quiet.url });
      expect(off.out).toContain(`Replay: nothing to replay: the server at ${quiet.url} records no steps (GUARD_RECORD_STEPS is off there); turn it on, or replay a file of steps (--replay steps.jsonl).`);
      expect(off.out).not.toContain('0 recorded steps');
      const none = await plan({ format: 'markdown', replay: true, server: recordingButEmpty.url });
      expect(none.out).toContain(`Replay: nothing to replay: the server at ${recordingButEmpty.url} records steps but has none yet`);
      const file = join(dir, 'empty.jsonl');
      writeFileSync(file, '\n');
      const empty = await plan({ format: 'json', replay: file, server: quiet.url });
      expect((JSON.parse(empty.out) as { replay: { headline: string } }).replay.headline).toBe(`Replay: nothing to replay: ${file} holds no steps.`);
    } finally {
      await quiet.close();
      await recordingButEmpty.close();
    }
  });
});
