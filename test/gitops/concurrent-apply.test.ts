// Two applies at once (two CLIs, same owner, --prune): one wins, the other is refused
// with nothing written, and the server ends up matching the winner's directory.
import { describe, expect, it } from 'vitest';
import type { GuardClient } from '../../src/client/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments, type LoadResult } from '../../src/gitops/load.js';
import { applyToServer, planAgainstServer } from '../../src/gitops/sync.js';
import { serverPerTest } from './server.js';

/** A directory of `count` controls named `<prefix>-N`, all linked to agent `bot`. */
function directory(prefix: string, count: number): LoadResult {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(3, '0')}`);
  const docs = names.map((name) => `kind: Control
name: ${name}
selector: { path: input }
evaluator: { name: regex, config: { pattern: '${name}' } }
action: { decision: deny }
`);
  docs.push(`kind: Agent\nagent_name: bot\ncontrols: [${names.join(', ')}]\n`);
  return loadDocuments([{ path: `${prefix}.yaml`, text: docs.join('---\n') }], { validateControl: controlValidator(createDefaultRegistry()) });
}

let client: GuardClient;

serverPerTest((_server, c) => {
  client = c;
});

describe('concurrent applies of the same owner', () => {
  it('refuse the one whose plan is stale: nothing of it is written, and the server matches the winner', async () => {
    await applyToServer(client, await planAgainstServer(client, directory('base', 20), {}));
    const left = directory('left', 400);
    const right = directory('right', 400);
    // Both plans are made against the same state, as two CLIs started together make them.
    const [leftPlan, rightPlan] = await Promise.all([planAgainstServer(client, left, { prune: true }), planAgainstServer(client, right, { prune: true })]);
    const [a, b] = await Promise.all([applyToServer(client, leftPlan), applyToServer(client, rightPlan)]);

    const results = [a, b];
    const won = results.filter((r) => r.failed === null);
    const lost = results.filter((r) => r.failed !== null);
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.failed).toMatchObject({ status: 409, code: 'stale_revision' });
    expect(lost[0]!.failed!.error).toMatch(/changed since this plan was made/);
    expect(lost[0]!.done).toEqual([]);

    const winner = a.failed === null ? left : right;
    expect((await planAgainstServer(client, winner, { prune: true })).plan.operations).toEqual([]);
  });

  it('refuses a plan made before someone else wrote, and a fresh plan applies', async () => {
    const dir = directory('d', 3);
    const planned = await planAgainstServer(client, dir, { prune: true });
    await client.createControl({ name: 'meanwhile' });
    const result = await applyToServer(client, planned);
    expect(result.failed).toMatchObject({ status: 409, code: 'stale_revision' });
    expect(result.done).toEqual([]);
    expect((await client.listAllControls()).map((c) => c.name)).toEqual(['meanwhile']);
    expect((await applyToServer(client, await planAgainstServer(client, dir, { prune: true }))).failed).toBeNull();
  });
});
