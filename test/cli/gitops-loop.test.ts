/**
 * The whole GitOps loop, in-process (runCliInProcess) against a real server on a free port:
 * validate, plan, apply, re-plan, edit, plan the diff, apply, export, plan the export, prune.
 * The binary itself starting, parsing and exiting for these commands is test/e2e/gitops.test.ts.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli-in-process.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { validatePlanApply } from '../support/cli-scenarios.js';

const repo = join(import.meta.dirname, '../..');

const cli = (args: string[], env: Record<string, string> = {}) => runCliInProcess(args, { cwd: work, env });

let work: string;
let server: TestServer;
let controls: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'guardctl-gitops-loop-'));
  controls = join(work, 'controls');
  cpSync(join(repo, 'test/fixtures/example-controls'), controls, { recursive: true });
  server = await startTestServer({ env: { OBSERVABILITY_ENABLED: 'false' }, listen: true });
});

afterAll(async () => {
  await server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const at = () => ({ GUARD_URL: server.url });

describe('guardctl gitops, the whole loop in-process', () => {
  it('validate, plan, apply, re-plan, edit, plan the diff, apply, export, plan the export, prune', { timeout: 120_000 }, async () => {
    await validatePlanApply(cli, server.url);
    const noop = await cli(['apply', 'controls', '--format', 'json'], at());
    expect(JSON.parse(noop.stdout)).toMatchObject({ converged: true, writes: 0, done: [] });

    const file = join(controls, 'deployments.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('decision: warn', 'decision: deny'));
    const diff = await cli(['plan', 'controls', '--detailed-exitcode'], at());
    expect(diff.code).toBe(2);
    expect(diff.stdout).toContain('~ update control "warn-shell-rm-rf"');
    expect(diff.stdout).toContain('action.decision: "warn" -> "deny"');
    const md = await cli(['plan', 'controls', '--format', 'markdown'], at());
    expect(md.stdout).toContain('| controls | 0 | 1 | 0 | | | 0 |');

    expect((await cli(['apply', 'controls'], at())).code).toBe(0);
    expect((await cli(['plan', 'controls', '--detailed-exitcode'], at())).code).toBe(0);

    const exported = await cli(['export', 'exported', '--format', 'json'], at());
    expect(exported.code).toBe(0);
    expect(JSON.parse(exported.stdout).controls).toBeGreaterThanOrEqual(7);
    const planExport = await cli(['plan', 'exported', '--detailed-exitcode'], at());
    expect(planExport.stdout).toContain('No changes');
    expect(planExport.code).toBe(0);
    expect((await cli(['export', 'exported'], at())).code).toBe(1);
    const slashed = await cli(['export', 'exported-again/'], at());
    expect(slashed.stdout).toMatch(/^Exported \d+ control\(s\) and 2 agent\(s\) to exported-again\/\n$/);

    unlinkSync(file);
    const agents = join(controls, 'agents.yaml');
    writeFileSync(agents, readFileSync(agents, 'utf8').replace(/\n {2}- (steer-production-deploys|warn-shell-rm-rf)/g, ''));
    const keep = await cli(['plan', 'controls'], at());
    expect(keep.stdout).not.toContain('delete control');
    const prune = await cli(['plan', 'controls', '--prune', '--format', 'json'], at());
    const deletes = (JSON.parse(prune.stdout) as { operations: Array<{ op: string; name?: string }> }).operations.filter((o) => o.op === 'delete_control');
    expect(deletes.map((o) => o.name)).toEqual(['steer-production-deploys', 'warn-shell-rm-rf']);
    expect((await cli(['apply', 'controls', '--prune'], at())).code).toBe(0);
    const list = (await (await fetch(`${server.url}/api/v1/controls?limit=100`)).json()) as { controls: Array<{ name: string }> };
    expect(list.controls.map((c) => c.name)).not.toContain('warn-shell-rm-rf');
    expect((await cli(['plan', 'controls', '--prune', '--detailed-exitcode'], at())).code).toBe(0);
  });
});
