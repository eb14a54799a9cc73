// guardctl eval --server: the same report, each case evaluated by a real server over HTTP.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { runApply } from '../../cli/commands/apply.js';
import { runEvalCommand } from '../../cli/commands/eval.js';
import type { ServerHandle } from '../../src/server/start.js';
import { startTestServer } from '../gitops/server.js';

const CONTROLS = `
kind: Control
name: no-secrets
selector: {path: input}
evaluator: {name: secrets}
action: {decision: deny}
---
kind: Agent
agent_name: bot
controls: [no-secrets]
`;
const KEY = 'AKIAQWERTYUIOPASDFGH';

let server: ServerHandle;
let root: string;
beforeAll(async () => {
  server = await startTestServer();
  root = mkdtempSync(join(tmpdir(), 'guard-eval-server-'));
  mkdirSync(join(root, 'controls'));
  writeFileSync(join(root, 'controls', 'c.yaml'), CONTROLS);
  const saved = process.stdout.write.bind(process.stdout);
  process.stdout.write = () => true;
  try {
    expect(await runApply(join(root, 'controls'), { server: server.url, format: 'json', owner: 'eval-test', autoApprove: true })).toBe(0);
  } finally {
    process.stdout.write = saved;
  }
});
afterAll(async () => server.close());

test('cases go to the server as the agent\'s steps; the report masks what matched', async () => {
  const dataset = join(root, 'cases.jsonl');
  const line = (id: string, input: string, want: boolean, agent?: string) =>
    JSON.stringify({ id, ...(agent ? { agent } : {}), stage: 'pre', step: { type: 'llm', name: 'chat', input }, expect: { triggers: { 'no-secrets': want } } });
  writeFileSync(dataset, [line('tp', `k ${KEY}`, true), line('fp', `k ${KEY}`, false, 'bot'), line('tn', 'hi', false), line('bad', 'hi', true, 'ghost')].join('\n'));
  let out = '';
  const code = await runEvalCommand(dataset, 'unused', { format: 'json', server: server.url, agent: 'bot' }, (t) => (out += t));
  const report = JSON.parse(out);
  expect(code).toBe(1);
  expect(report.via).toBe(server.url);
  expect(report.controls[0]).toMatchObject({ name: 'no-secrets', tp: 1, fp: 1, tn: 1, fn: 0 });
  expect(report.controls[0].p50_ms).toBeGreaterThan(0);
  expect(report.diagnostics).toEqual([expect.objectContaining({ line: 4, message: 'unknown agent "ghost"' })]);
  expect(out).not.toContain(KEY);
});
