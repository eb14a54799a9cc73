// Plan and apply against a real server: convergence, failure reports, ownership, export.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GuardClient } from '../../src/client/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import type { ServerHandle } from '../../src/server/start.js';
import { applyOperations, type ProgressEvent, type Target } from '../../src/gitops/apply.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { checkWithServer, loadDirectory } from '../../src/gitops/directory.js';
import { exportState } from '../../src/gitops/export.js';
import { fetchActualState } from '../../src/gitops/fetch-state.js';
import { fingerprintOf } from '../../src/gitops/fingerprint.js';
import { CHANGES_PER_REQUEST, HttpTarget } from '../../src/gitops/http-target.js';
import { loadDocuments, type LoadResult } from '../../src/gitops/load.js';
import { applyToServer, planAgainstServer, type ServerPlan } from '../../src/gitops/sync.js';
import { serverPerTest } from './server.js';

/** The target's methods as plain functions, so a test can replace one of them. */
function bind(target: HttpTarget): Target {
  return {
    createControl: (op) => target.createControl(op),
    updateControl: (op) => target.updateControl(op),
    deleteControl: (op) => target.deleteControl(op),
    upsertAgent: (op) => target.upsertAgent(op),
    link: (op) => target.link(op),
    unlink: (op) => target.unlink(op),
    fingerprint: () => target.fingerprint(),
  };
}

const controlsDir = join(import.meta.dirname, '../fixtures/example-controls');
let server: ServerHandle;
let client: GuardClient;

serverPerTest((s, c) => {
  server = s;
  client = c;
}, 10_000);

describe('plan and apply against a server', () => {
  it('applies the repository controls, then re-plans to no changes with zero writes', async () => {
    const loaded = await loadDirectory(controlsDir, createDefaultRegistry());
    const first = await planAgainstServer(client, loaded, {});
    expect(first.plan.summary.create_control).toBe(loaded.controls.length);
    const result = await applyToServer(client, first);
    expect(result.failed).toBeNull();
    expect(result.done).toHaveLength(first.plan.operations.length);

    const again = await planAgainstServer(client, loaded, {});
    expect(again.plan.operations).toEqual([]);
    const second = await applyToServer(client, again);
    expect(second.writes).toBe(0);

    const records = await client.listAllControls();
    expect(records.every((r) => r.managed_by === 'gitops:default')).toBe(true);
    expect(records.find((r) => r.name === 'block-destructive-sql')?.source).toMatch(/sql-safety\.yaml:\d+$/);
  });

  it('stops at a failure, reports done and not done, and a re-run converges', async () => {
    const registry = createDefaultRegistry();
    const loaded = await loadDirectory(controlsDir, registry);
    const { plan, actual } = await planAgainstServer(client, loaded, {});
    const target = new HttpTarget(client, actual);
    // Someone deletes a control between its creation and its first link: that link fails.
    const firstLink = plan.operations.findIndex((o) => o.op === 'link');
    const victim = plan.operations[firstLink]!;
    let deleted = false;
    const interfering: Target = {
      ...bind(target),
      link: async (op) => {
        if (!deleted) {
          deleted = true;
          const page = await client.listControls({ name: op.control_name });
          await client.deleteControl(page.controls[0]!.control_id);
        }
        return target.link(op);
      },
    };
    const result = await applyOperations(plan.operations, interfering);
    expect(result.failed?.operation).toEqual(victim);
    expect(result.failed?.error).toMatch(/404/);
    expect(result.done).toEqual(plan.operations.slice(0, firstLink));
    expect(result.notDone).toEqual(plan.operations.slice(firstLink + 1));

    const rerun = await planAgainstServer(client, loaded, {});
    expect(rerun.plan.summary.create_control).toBe(1);
    expect((await applyToServer(client, rerun)).failed).toBeNull();
    expect((await planAgainstServer(client, loaded, {})).plan.operations).toEqual([]);
  });

  it('with several requests in flight, still accounts for every operation exactly once', async () => {
    const loaded = await loadDirectory(controlsDir, createDefaultRegistry());
    const { plan, actual } = await planAgainstServer(client, loaded, {});
    const target = new HttpTarget(client, actual);
    const gone = 'deny-secrets-in-output';
    const result = await applyOperations(plan.operations, {
      ...bind(target),
      link: async (op) => {
        if (op.control_name === gone) throw new Error('refused for the test');
        return target.link(op);
      },
    }, { concurrency: 4 });
    expect(result.failed?.operation).toMatchObject({ op: 'link', control_name: gone });
    const seen = [...result.done, result.failed!.operation, ...result.notDone];
    expect(new Set(seen).size).toBe(plan.operations.length);
    // Controls and agents come before links, so they were all done.
    expect(result.done.filter((o) => o.op !== 'link')).toHaveLength(plan.operations.filter((o) => o.op !== 'link').length);
    expect(result.notDone.every((o) => o.op === 'link')).toBe(true);
    expect((await applyToServer(client, await planAgainstServer(client, loaded, {}))).failed).toBeNull();
  });

  it('leaves a hand-made control alone unless forced, and prunes only owned controls', async () => {
    await client.createControl({ name: 'hand-made', data: { selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern: 'a' } }, action: { decision: 'log' } } });
    const text = (pattern: string) => `kind: Control
name: hand-made
selector: { path: input }
evaluator: { name: regex, config: { pattern: '${pattern}' } }
action: { decision: log }
---
kind: Control
name: owned
selector: { path: input }
evaluator: { name: regex, config: { pattern: o } }
action: { decision: log }
`;
    const validateControl = controlValidator(createDefaultRegistry());
    const loaded = loadDocuments([{ path: 'c.yaml', text: text('b') }], { validateControl });
    const p = await planAgainstServer(client, loaded, {});
    expect(p.plan.conflicts.map((c) => c.name)).toEqual(['hand-made']);
    expect(p.plan.operations.map((o) => o.op)).toEqual(['create_control']);

    const forced = await planAgainstServer(client, loaded, { force: true });
    expect((await applyToServer(client, forced)).failed).toBeNull();
    const taken = (await client.listAllControls()).find((c) => c.name === 'hand-made');
    expect(taken?.managed_by).toBe('gitops:default');

    const none = loadDocuments([{ path: 'd.yaml', text: 'kind: Agent\nagent_name: x\n' }], { validateControl });
    const pruned = await planAgainstServer(client, none, { prune: true });
    expect(pruned.plan.operations.filter((o) => o.op === 'delete_control').map((o) => o.op === 'delete_control' && o.name)).toEqual(['hand-made', 'owned']);
  });

  it('exports the server state so that loading it back plans no changes', async () => {
    const registry = createDefaultRegistry();
    const loaded = await loadDirectory(controlsDir, registry);
    await applyToServer(client, await planAgainstServer(client, loaded, {}));
    const state = await fetchActualState(client);
    const exported = exportState(state);
    expect(exported.files.map((f) => f.path)).toContain('agents.yaml');
    expect(exported.files.every((f) => f.text.startsWith('# yaml-language-server: $schema='))).toBe(true);
    const back = loadDocuments(exported.files, { validateControl: controlValidator(registry) });
    expect(back.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect((await planAgainstServer(client, back, {})).plan.operations).toEqual([]);
    // Deterministic: the same state exports the same bytes.
    expect(exportState(state)).toEqual(exported);
  });

  it('validate --server: the server names evaluators it lacks and rejects what it cannot save', async () => {
    // Offline there is a plugin evaluator the server does not have.
    const registry = createDefaultRegistry({
      extra: [{ name: 'local_only', description: 'test plugin', configSchema: { type: 'object' }, compile: () => () => ({ matched: false, confidence: 1 }) }],
    });
    const text = `kind: Control
name: uses-plugin
selector: { path: input }
evaluator:
  name: local_only
action: { decision: log }
---
kind: Agent
agent_name: bot
controls: [uses-plugin]
`;
    const loaded = loadDocuments([{ path: 'p.yaml', text }], { validateControl: controlValidator(registry) });
    expect(loaded.diagnostics).toEqual([]);
    const remote = await checkWithServer(client, loaded);
    expect(remote.map((d) => [d.code, d.line, d.column, d.field])).toEqual([
      ['unknown_evaluator', 5, 9, 'evaluator.name'],
      ['unknown_evaluator', 5, 9, 'evaluator.name'],
    ]);
    expect(remote[0]!.message).toMatch(/server does not know evaluator "local_only"|server rejects it/);
  });

  it('changes the fingerprint when the server changes and only then', async () => {
    const before = fingerprintOf(await fetchActualState(client));
    expect(fingerprintOf(await fetchActualState(client))).toBe(before);
    await client.initAgent({ agent_name: 'someone' });
    expect(fingerprintOf(await fetchActualState(client))).not.toBe(before);
  });

  it("changes the fingerprint when a control's data changes by PUT, enabled and everything else unchanged", async () => {
    const data = {
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)drop\\s+table' } },
      action: { decision: 'deny' as const },
    };
    const { control_id } = await client.createControl({ name: 'no-drop', data });
    const before = await fetchActualState(client);
    await client.putControlData(control_id, { ...data, evaluator: { name: 'regex', config: { pattern: '(?i)truncate\\s+table' } } });
    const after = await fetchActualState(client);
    expect(after.controls.map((c) => [c.name, c.enabled, c.managed_by])).toEqual(before.controls.map((c) => [c.name, c.enabled, c.managed_by]));
    expect(fingerprintOf(after)).not.toBe(fingerprintOf(before));
  });
});

/** `count` controls in one file and one agent linked to the first `links` of them. */
function generated(count: number, links: number): LoadResult {
  const docs = Array.from({ length: count }, (_, i) => `kind: Control
name: gen-${String(i).padStart(4, '0')}
selector: { path: input }
evaluator: { name: regex, config: { pattern: 'x${i}' } }
action: { decision: log }
`);
  const linked = Array.from({ length: links }, (_, i) => `gen-${String(i).padStart(4, '0')}`);
  docs.push(`kind: Agent\nagent_name: bot\ncontrols: [${linked.join(', ')}]\n`);
  return loadDocuments([{ path: 'gen.yaml', text: docs.join('---\n') }], { validateControl: controlValidator(createDefaultRegistry()) });
}

/** A plan without the store revision it was made at: apply then sends no expected_revision. */
function withoutRevision<P extends ServerPlan>(p: P): P {
  const { revision: _revision, ...actual } = p.actual;
  return { ...p, actual };
}

describe('apply in batches (POST /changes)', () => {
  it('sends a step of the plan in a few requests and converges', async () => {
    const loaded = generated(600, 300);
    const requests: string[] = [];
    const counting = new GuardClient({
      serverUrl: server.url,
      timeoutMs: 10_000,
      fetch: (input, init) => {
        const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
        requests.push(`${init?.method ?? 'GET'} ${new URL(url).pathname}`);
        return fetch(input, init);
      },
    });
    const first = await planAgainstServer(counting, loaded, {});
    requests.length = 0;
    const events: ProgressEvent[] = [];
    const result = await applyToServer(counting, first, (e) => events.push(e));
    expect(result.failed).toBeNull();
    expect(result.done).toHaveLength(600 + 1 + 300);
    expect(result.writes).toBe(901);
    // 901 operations, 250 a request, cut across the steps of the plan's order.
    expect(requests).toEqual(Array.from({ length: 4 }, () => 'POST /api/v1/changes'));
    expect(events.filter((e) => e.status === 'done').map((e) => e.index)).toEqual(Array.from({ length: 901 }, (_, i) => i + 1));
    expect((await client.getAgent('bot')).controls).toHaveLength(300);
    expect((await planAgainstServer(client, loaded, {})).plan.operations).toEqual([]);
  });

  it('a failed batch is not done as a whole, batches before it are, and a re-run converges', async () => {
    const loaded = generated(600, 10);
    const first = await planAgainstServer(client, loaded, {});
    // Someone makes a control of a planned name in the second batch after the plan was made.
    const interloper = 'gen-0300';
    await client.createControl({ name: interloper });
    const events: ProgressEvent[] = [];
    // Without the revision the plan was read at (as from a server that does not tell it),
    // apply cannot refuse the stale plan up front and meets the conflict in its second batch.
    const result = await applyToServer(client, withoutRevision(first), (e) => events.push(e));

    const ops = first.plan.operations;
    const failedAt = ops.findIndex((o) => o.op === 'create_control' && o.name === interloper);
    expect(result.failed?.operation).toEqual(ops[failedAt]);
    expect(result.failed?.status).toBe(409);
    expect(result.failed?.error).toMatch(/already exists/);
    expect(result.failed?.error).toMatch(/rolled back/);
    // The first batch committed; the failed batch (rolled back whole) and all later ones did not.
    expect(result.done).toEqual(ops.slice(0, CHANGES_PER_REQUEST));
    expect(result.notDone).toEqual(ops.slice(CHANGES_PER_REQUEST).filter((o) => o !== ops[failedAt]));
    expect(events.filter((e) => e.status === 'done')).toHaveLength(CHANGES_PER_REQUEST);
    expect(events.find((e) => e.status === 'failed')).toMatchObject({ index: failedAt + 1, operation: ops[failedAt] });
    const names = (await client.listAllControls()).map((c) => c.name);
    expect(names).toHaveLength(CHANGES_PER_REQUEST + 1);
    expect(names).not.toContain('gen-0299');

    // Fix the cause (take the control over) and run again: it picks up where it stopped.
    const rerun = await planAgainstServer(client, loaded, { force: true });
    expect(rerun.plan.summary.create_control).toBe(600 - CHANGES_PER_REQUEST - 1);
    expect((await applyToServer(client, rerun)).failed).toBeNull();
    expect((await planAgainstServer(client, loaded, {})).plan.operations).toEqual([]);
  });

  it('treats deletes and unlinks of controls already gone as done', async () => {
    const loaded = generated(3, 3);
    await applyToServer(client, await planAgainstServer(client, loaded, {}));
    const fewer = generated(1, 1);
    const pruning = await planAgainstServer(client, fewer, { prune: true });
    expect(pruning.plan.summary).toMatchObject({ unlink: 2, delete_control: 2 });
    // gen-0002 disappears between plan and apply (its links go with it).
    const gone = (await client.listControls({ name: 'gen-0002' })).controls[0]!;
    await client.deleteControl(gone.control_id);
    const result = await applyToServer(client, withoutRevision(pruning));
    expect(result.failed).toBeNull();
    expect(result.done).toEqual(pruning.plan.operations);
    // One batch: 2 unlinks and 2 deletes (refused: 404 for the vanished control's unlink),
    // then 3 (refused: its delete), then the 2 of the control that still exists.
    expect(result.writes).toBe(4 + 3 + 2);
    expect((await client.listAllControls()).map((c) => c.name)).toEqual(['gen-0000']);
    expect((await planAgainstServer(client, fewer, { prune: true })).plan.operations).toEqual([]);
  });
});
