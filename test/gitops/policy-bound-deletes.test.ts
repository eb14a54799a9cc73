// GitOps against a real server when a control a policy binds is deleted: a directory that
// removes both converges; a plan that deletes one a kept policy binds is refused up front;
// a saved plan edited to delete it anyway is refused by the server, which deletes nothing.
import { describe, expect, it } from 'vitest';
import type { GuardClient } from '../../src/client/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments, type LoadResult } from '../../src/gitops/load.js';
import { planFileOf, planOfFile, parsePlanFile } from '../../src/gitops/plan-file.js';
import { refusalOf } from '../../src/gitops/refusal.js';
import { applyToServer, planAgainstServer } from '../../src/gitops/sync.js';
import { serverPerTest } from './server.js';

let client: GuardClient;
serverPerTest((_server, c) => {
  client = c;
});

const control = (name: string, pattern: string) => `kind: Control
name: ${name}
scope: { step_types: [tool], stages: [pre] }
selector: { path: input.query }
evaluator: { name: regex, config: { pattern: '${pattern}' } }
action: { decision: deny }
`;
const policy = (name: string, controls: string[]) => `kind: Policy
name: ${name}
controls: [${controls.join(', ')}]
agents: { match_labels: { pci: "true" } }
`;

function load(...docs: string[]): LoadResult {
  const loaded = loadDocuments([{ path: 'controls/all.yaml', text: docs.join('---\n') }], { validateControl: controlValidator(createDefaultRegistry()) });
  expect(loaded.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return loaded;
}

async function decision(agent: string): Promise<string> {
  return (await client.evaluate({ agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } } })).decision;
}

const invocation = { directory: 'controls', owner: 'default' };

describe('deleting a control a policy binds, through GitOps', () => {
  it('a directory removing a control and the policy that binds it converges in one apply', async () => {
    expect((await applyToServer(client, await planAgainstServer(client, load(control('no-drop', '(?i)drop'), control('other', 'zzz'), policy('pci', ['no-drop'])), {}))).failed).toBeNull();
    await client.initAgent({ agent_name: 'pay', labels: { pci: 'true' } });
    expect(await decision('pay')).toBe('deny');
    const removal = await planAgainstServer(client, load(control('other', 'zzz')), { prune: true });
    expect(refusalOf(removal.plan, invocation)).toBeNull();
    expect(removal.plan.operations.map((o) => `${o.op} ${'name' in o ? o.name : ''}`)).toEqual(['delete_policy pci', 'delete_control no-drop']);
    expect((await applyToServer(client, removal)).failed).toBeNull();
    expect(await decision('pay')).toBe('allow');
    expect((await planAgainstServer(client, load(control('other', 'zzz')), { prune: true })).plan.operations).toEqual([]);
  });

  it('a plan deleting a control that a hand-made policy binds is refused up front; a saved plan edited to do it is refused by the server', async () => {
    expect((await applyToServer(client, await planAgainstServer(client, load(control('no-drop', '(?i)drop'), control('other', 'zzz')), {}))).failed).toBeNull();
    await client.policies.create({ name: 'by-hand', controls: ['no-drop'], agents: { match_labels: { pci: 'true' } } });
    await client.initAgent({ agent_name: 'pay', labels: { pci: 'true' } });
    expect(await decision('pay')).toBe('deny');

    const removal = await planAgainstServer(client, load(control('other', 'zzz')), { prune: true });
    expect(removal.plan.conflicts).toEqual([{ name: 'no-drop', managed_by: 'gitops:default', changes: [], bound_by: [{ policy: 'by-hand', managed_by: null }] }]);
    expect(refusalOf(removal.plan, invocation)?.groups[0]?.why).toBe('bound by policy "by-hand" (made outside guardctl apply)');

    // The CLI saves no plan with conflicts; an attacker writes the file by hand instead.
    const text = JSON.stringify(planFileOf({ ...removal.plan, conflicts: [] }, { server: 'x', fingerprint: removal.fingerprint, directory: 'controls' }));
    const parsed = parsePlanFile(text);
    if (!parsed.ok) throw new Error(parsed.error);
    const result = await applyToServer(client, { plan: planOfFile(parsed.file), actual: removal.actual });
    expect(result.failed?.status).toBe(409);
    expect(result.failed?.error).toContain('control "no-drop" cannot be deleted: policy "by-hand" binds it');
    expect(result.done).toEqual([]);
    expect((await client.listControls({ name: 'no-drop' })).controls).toHaveLength(1);
    expect(await decision('pay')).toBe('deny');
  });
});
