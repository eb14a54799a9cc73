/**
 * Policies through the commands, in-process (runCliInProcess) against a real server on a free
 * port: validate (positions, warnings), plan with each policy's reach, apply, an agent
 * registering later guarded at once, decision tests by labels, history, export then plan: no
 * changes. The binary running them is test/e2e/policies.test.ts.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send } from '../e2e/serve-process.js';
import { runCliInProcess } from '../support/cli-in-process.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { POLICIES_YAML } from '../support/cli-scenarios.js';

let work: string;
let server: TestServer;
const cli = (args: string[]) => runCliInProcess(args, { cwd: work, env: { GUARD_URL: server.url } });

const CONTROLS = POLICIES_YAML;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'guardctl-policies-'));
  mkdirSync(join(work, 'controls'));
  writeFileSync(join(work, 'controls', 'all.yaml'), CONTROLS);
  server = await startTestServer({ env: { OBSERVABILITY_ENABLED: 'false' }, listen: true });
});

afterAll(async () => {
  await server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('guardctl and policies', () => {
  it('validate, plan, apply, late registration, test, export', { timeout: 120_000 }, async () => {
    expect((await cli(['validate', 'controls'])).code).toBe(0);
    expect((await cli(['test', 'controls'])).code).toBe(0);

    const plan = await cli(['plan', 'controls']);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toContain('+ pci-baseline -> 1 agent (1 new)');

    const applied = await cli(['apply', 'controls', '--auto-approve']);
    expect(applied.code, applied.stderr).toBe(0);
    expect((await cli(['plan', 'controls', '--detailed-exitcode'])).code).toBe(0);

    const history = await cli(['history', '--policy', 'pci-baseline']);
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toMatch(/^History of policy "pci-baseline" \(id \d+\) on /);
    expect(history.stdout).toContain('  + create (binds 1 control)');
    const historyJson = JSON.parse((await cli(['history', '--policy', 'pci-baseline', '--format', 'json'])).stdout) as Record<string, unknown>;
    expect(Object.keys(historyJson)).toEqual(['version', 'policy_id', 'name', 'server', 'more', 'entries']);
    const unknown = await cli(['history', '--policy', 'no-such-policy']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no policy is named "no-such-policy"');

    // An agent registering later with matching labels: denied on its first evaluation.
    expect((await send(server.url, 'POST', '/api/v1/agents/initAgent', { agent_name: 'pay-2', labels: { pci: 'true' } })).status).toBe(201);
    const verdict = await send(server.url, 'POST', '/api/v1/evaluation', {
      agent_name: 'pay-2',
      stage: 'pre',
      step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE t' } },
    });
    expect((verdict.body as { decision: string }).decision).toBe('deny');

    const exported = await cli(['export', 'exported']);
    expect(exported.code, exported.stderr).toBe(0);
    expect(readFileSync(join(work, 'exported', 'policies.yaml'), 'utf8')).toContain('name: pci-baseline');
    expect((await cli(['plan', 'exported', '--detailed-exitcode'])).code).toBe(0);
  });

  it('validate names bad label syntax and unknown controls at file:line:col, and warns about empty selectors', { timeout: 60_000 }, async () => {
    mkdirSync(join(work, 'bad'));
    writeFileSync(
      join(work, 'bad', 'p.yaml'),
      `kind: Policy
name: broken
controls: [no-such-control]
agents: { match_labels: { "bad key!": x } }
---
kind: Policy
name: lonely
controls: [no-such-control]
agents: { match_labels: { nobody: here } }
`,
    );
    const out = await cli(['validate', 'bad', '--format', 'json']);
    expect(out.code).toBe(1);
    const diagnostics = (JSON.parse(out.stdout) as { diagnostics: Array<{ code: string; line: number; column: number; severity: string }> }).diagnostics;
    const brief = diagnostics.map((d) => `${d.severity} ${d.code} ${d.line}:${d.column}`);
    expect(brief).toContain('error unknown_control 8:12');
    expect(brief.some((b) => /^warning selects_nothing 9:\d+$/.test(b))).toBe(true);
    expect(brief.some((b) => /^error \w+ 4:\d+$/.test(b))).toBe(true);
  });
});
