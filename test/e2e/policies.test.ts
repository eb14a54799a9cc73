// The built binary and policies: validate, apply, an agent registering later guarded at once
// by the serve process, plan: no changes. What the commands do with policies (each policy's
// reach in plan, history, tests by labels, export, diagnostics at file:line:col) is tested
// in-process: test/cli/policies-loop.test.ts.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { requireBuiltBinary, send, startServeProcess, type ServeProcess } from './serve-process.js';
import { POLICIES_YAML } from '../support/cli-scenarios.js';

let work: string;
let server: ServeProcess;
const cli = (args: string[]) => runCli(args, { cwd: work, env: { GUARD_URL: server.url } });

const CONTROLS = POLICIES_YAML;

beforeAll(async () => {
  requireBuiltBinary();
  work = mkdtempSync(join(tmpdir(), 'guardctl-e2e-policies-'));
  mkdirSync(join(work, 'controls'));
  writeFileSync(join(work, 'controls', 'all.yaml'), CONTROLS);
  server = await startServeProcess({ args: ['--db', join(work, 'db.sqlite')], cwd: work, env: { OBSERVABILITY_ENABLED: 'false' } });
});

afterAll(async () => {
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('guardctl and policies, end to end', () => {
  it('validate, apply, an agent registering later guarded at once, plan: no changes', { timeout: 120_000 }, async () => {
    expect((await cli(['validate', 'controls'])).code).toBe(0);
    const applied = await cli(['apply', 'controls', '--auto-approve']);
    expect(applied.code, applied.stderr).toBe(0);
    expect((await cli(['plan', 'controls', '--detailed-exitcode'])).code).toBe(0);

    // An agent registering later with matching labels: denied on its first evaluation.
    expect((await send(server.url, 'POST', '/api/v1/agents/initAgent', { agent_name: 'pay-2', labels: { pci: 'true' } })).status).toBe(201);
    const verdict = await send(server.url, 'POST', '/api/v1/evaluation', {
      agent_name: 'pay-2',
      stage: 'pre',
      step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE t' } },
    });
    expect((verdict.body as { decision: string }).decision).toBe('deny');
  });
});
