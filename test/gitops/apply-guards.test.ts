// Apply never leaves an agent with fewer guards than both the old and the new state: a
// rename of every control, watched after every batch and by a concurrent evaluator.
import { describe, expect, it } from 'vitest';
import type { GuardClient } from '../../src/client/index.js';
import { applyOperations, type BatchTarget } from '../../src/gitops/apply.js';
import { HttpTarget } from '../../src/gitops/http-target.js';
import type { Operation } from '../../src/gitops/plan.js';
import { applyToServer, planAgainstServer } from '../../src/gitops/sync.js';
import { AGENTS, generation, unguarded } from './generations.js';
import { serverPerTest } from './server.js';

let client: GuardClient;

serverPerTest((_server, c) => {
  client = c;
});

async function linksOf(): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const agent of AGENTS) out.set(agent, ((await client.getAgent(agent)).controls ?? []).map((c) => c.name));
  return out;
}

async function decisionOf(agent: string): Promise<string> {
  const result = await client.evaluate({ agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'run', input: 'anything' } });
  return result.decision;
}

describe('apply keeps every agent guarded while it renames its controls', () => {
  it('after every batch, each agent holds all of its old or all of its new controls, and the always-deny control denies', async () => {
    const oldGen = generation('old', 120);
    const newGen = generation('new', 120);
    expect((await applyToServer(client, await planAgainstServer(client, oldGen, {}))).failed).toBeNull();
    const renamed = await planAgainstServer(client, newGen, { prune: true });
    expect(renamed.plan.summary).toMatchObject({ create_control: 363, link: 363, unlink: 363, delete_control: 363 });

    const target = new HttpTarget(client, renamed.actual);
    const problems: string[] = [];
    let batches = 0;
    // Between two batches is where a cancelled CI job stops a CLI: look at the server there.
    const watching: BatchTarget = {
      createControl: (op) => target.createControl(op),
      updateControl: (op) => target.updateControl(op),
      deleteControl: (op) => target.deleteControl(op),
      upsertAgent: (op) => target.upsertAgent(op),
      link: (op) => target.link(op),
      unlink: (op) => target.unlink(op),
      fingerprint: () => target.fingerprint(),
      batchesOf: (ops) => target.batchesOf(ops),
      applyBatch: async (ops: readonly Operation[]) => {
        await target.applyBatch(ops);
        batches++;
        for (const agent of unguarded(await linksOf(), oldGen, newGen)) problems.push(`after batch ${batches}: ${agent}`);
        for (const agent of AGENTS) {
          const decision = await decisionOf(agent);
          if (decision !== 'deny') problems.push(`after batch ${batches}: ${agent} ${decision}`);
        }
      },
    };
    const result = await applyOperations(renamed.plan.operations, watching);
    expect(result.failed).toBeNull();
    expect(batches).toBeGreaterThan(3);
    expect(problems).toEqual([]);
    expect((await planAgainstServer(client, newGen, { prune: true })).plan.operations).toEqual([]);
  });

  it('a concurrent evaluator hammering the always-deny control never sees allow', async () => {
    const oldGen = generation('old', 150);
    const newGen = generation('new', 150);
    await applyToServer(client, await planAgainstServer(client, oldGen, {}));
    const renamed = await planAgainstServer(client, newGen, { prune: true });
    let applying = true;
    const seen = new Map<string, number>();
    const hammer = async () => {
      for (let i = 0; applying; i++) {
        const decision = await decisionOf(AGENTS[i % AGENTS.length]!);
        seen.set(decision, (seen.get(decision) ?? 0) + 1);
      }
    };
    const hammers = [hammer(), hammer()];
    const result = await applyToServer(client, renamed).finally(() => (applying = false));
    await Promise.all(hammers);
    expect(result.failed).toBeNull();
    expect([...seen.keys()]).toEqual(['deny']);
  });
});
