/**
 * A shadow-first rollout end to end, in-process (runCliInProcess) against a real server on a
 * free port: apply in shadow, measure with shadow-report, see the figures in plan, promote,
 * read the history. The binary running these commands is test/e2e/shadow.test.ts.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send } from '../e2e/serve-process.js';
import { runCliInProcess } from '../support/cli-in-process.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { shadowControlYaml } from '../support/cli-scenarios.js';

const ADMIN = 'e2e-admin-key-000001';
const fingerprint = createHash('sha256').update(ADMIN).digest('hex').slice(0, 8);
const SSN = '078-05-1120';

let work: string;
let server: TestServer;
const cli = (args: string[]) => runCliInProcess(args, { cwd: work, env: { GUARD_URL: server.url, GUARD_API_KEY: ADMIN } });

/** The control in `mode` (a bad value too, for the diagnostic). */
function writeControls(mode: string): void {
  writeFileSync(
    join(work, 'controls', 'pii.yaml'),
    shadowControlYaml(mode),
  );
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'guardctl-shadow-'));
  mkdirSync(join(work, 'controls'));
  server = await startTestServer({
    env: { OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '0.05', GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: ADMIN },
    observability: {},
    listen: true,
  });
  // Flushed on its timer, as `guardctl serve` does once it listens.
  server.observability!.start();
});

afterAll(async () => {
  await server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('shadow-first rollout', () => {
  it('apply in shadow, measure with shadow-report, see the figures in plan, promote, read the history', { timeout: 120_000 }, async () => {
    writeControls('shadow');
    const applied = await cli(['apply', 'controls']);
    expect(applied.code, applied.stderr).toBe(0);

    // Live traffic: 3 of 10 answers carry an SSN. In shadow mode none is denied.
    for (let i = 0; i < 10; i++) {
      const output = i < 3 ? `The customer's SSN is ${SSN}` : 'Your order has shipped';
      const res = await send(server.url, 'POST', '/api/v1/evaluation', { agent_name: 'support-bot', stage: 'post', step: { type: 'llm', name: 'chat', input: 'hi', output } }, { 'x-api-key': ADMIN });
      expect(res.body.decision).toBe('allow');
    }
    // Events are written on the server's flush timer: asked of the API, then of the command below.
    const evaluated = async () => ((await send(server.url, 'GET', '/api/v1/shadow-report', undefined, { 'x-api-key': ADMIN })).body.controls as Array<{ evaluated: number }>)[0]?.evaluated;
    await expect.poll(evaluated, { interval: 20 }).toBe(10);

    const report = await cli(['shadow-report', '--since', '1h']);
    expect(report.code, report.stderr).toBe(0);
    expect(report.stdout).toContain('block-ssn-in-output  (would deny');
    expect(report.stdout).toMatch(/evaluated 10 steps\s+would deny 3\s+would steer 0\s+matched 3\s+errors 0/);
    expect(report.stdout).toContain('"output":"[MATCHED]"');
    expect(report.stdout).not.toContain(SSN);
    const scoped = JSON.parse((await cli(['shadow-report', '--agent', 'support-bot', '--format', 'json'])).stdout);
    expect(scoped).toMatchObject({ version: 1, agent_name: 'support-bot', controls: [{ would_deny: 3, evaluated: 10 }] });
    const badSince = await cli(['shadow-report', '--since', 'soon']);
    expect(badSince.code).toBe(1);
    expect(badSince.stderr).toContain('--since "soon" is not a duration or a time');

    // The pull request that turns it on shows what it would have done.
    writeControls('enforce');
    const plan = await cli(['plan', 'controls']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('      mode: shadow -> enforce (would have denied 3 of 10 steps in the last 24 h)');
    const markdown = await cli(['plan', 'controls', '--format', 'markdown']);
    expect(markdown.stdout).toContain('~ block-ssn-in-output: mode shadow -> enforce (would have denied 3 of 10 steps in the last 24 h)');
    const planJson = JSON.parse((await cli(['plan', 'controls', '--format', 'json'])).stdout);
    expect(planJson.promotions).toEqual([
      { name: 'block-ssn-in-output', control_id: expect.any(Number), decision: 'deny', figures: { time_range: '24h', evaluated: 10, matched: 3, would_deny: 3, would_steer: 0 } },
    ]);

    expect((await cli(['apply', 'controls'])).code).toBe(0);
    const denied = await send(server.url, 'POST', '/api/v1/evaluation', { agent_name: 'support-bot', stage: 'post', step: { type: 'llm', name: 'chat', input: 'hi', output: `SSN ${SSN}` } }, { 'x-api-key': ADMIN });
    expect(denied.body.decision).toBe('deny');

    const history = await cli(['history', 'block-ssn-in-output']);
    expect(history.code, history.stderr).toBe(0);
    const lines = history.stdout.split('\n');
    expect(lines[0]).toMatch(/^History of control "block-ssn-in-output" \(id \d+\) on http/);
    expect(lines.filter((l) => /^r\d+ /.test(l)).map((l) => l.split(/\s+/).slice(2).join(' '))).toEqual([
      `apply admin:${fingerprint}`,
      `apply admin:${fingerprint}`,
      `apply admin:${fingerprint}`,
    ]);
    expect(history.stdout).toContain('  ~ update\n      mode: "shadow" -> "enforce"');
    expect(history.stdout).toContain('  + link agent "support-bot"');
    expect(history.stdout).toContain('  + create (deny, regex on output)');
    expect(history.stdout).not.toContain(ADMIN);
    const historyJson = JSON.parse((await cli(['history', 'block-ssn-in-output', '--format', 'json', '--limit', '1'])).stdout);
    expect(historyJson).toMatchObject({ version: 1, name: 'block-ssn-in-output', more: true, entries: [{ op: 'update', source: 'apply' }] });
    const unknown = await cli(['history', 'no-such-control']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no control is named "no-such-control"');

    // Deleted (by hand), its history is still read by id, under the name it had.
    const id = historyJson.control_id as number;
    expect((await send(server.url, 'DELETE', `/api/v1/controls/${id}`, undefined, { 'x-api-key': ADMIN })).status).toBe(200);
    const gone = await cli(['history', String(id)]);
    expect(gone.code, gone.stderr).toBe(0);
    expect(gone.stdout).toMatch(new RegExp(`^History of control "block-ssn-in-output" \\(id ${id}\\)`));
    expect(gone.stdout).toMatch(new RegExp(`r\\d+ .* api {2}admin:${fingerprint}\\n {2}- delete\\n {6}unlinked from support-bot`));
  });
});
