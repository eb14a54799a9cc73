/**
 * What every Store does with labels and policies, run against SQLite and PostgreSQL:
 * membership resolved when agents or policies are written, the union of links and
 * policies with each control once, and history of policy writes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreError, type Store } from '../../src/store/types.js';
import { controlData } from './store-contract.js';

export function definePolicyContract(name: string, open: () => Promise<Store>): void {
  describe(`Policy contract: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
      await store.createControl({ name: 'pci-1', data: controlData() });
      await store.createControl({ name: 'pci-2', data: controlData({ action: { decision: 'warn' } }) });
      await store.createControl({ name: 'own', data: controlData() });
    });
    afterEach(async () => {
      await store.close();
    });

    const namesOf = async (agent: string) => (await store.agentControlSet(agent))?.controls.map((c) => c.name) ?? null;

    it('stores labels on agents and changes them by patch', async () => {
      const { agent } = await store.upsertAgent({ agent_name: 'pay', labels: { team: 'payments', 'example.com/tier': 'gold' } });
      expect(agent.labels).toEqual({ team: 'payments', 'example.com/tier': 'gold' });
      const patched = await store.patchAgent('pay', { labels: { team: 'risk' } });
      expect(patched.labels).toEqual({ team: 'risk' });
      expect((await store.getAgent('pay'))?.labels).toEqual({ team: 'risk' });
      const plain = await store.upsertAgent({ agent_name: 'plain' });
      expect(plain.agent.labels).toEqual({});
    });

    it('guards selected agents, including agents registered after the policy', async () => {
      await store.upsertAgent({ agent_name: 'early', labels: { pci: 'true' } });
      await store.upsertAgent({ agent_name: 'other', labels: { pci: 'false' } });
      const policy = await store.createPolicy({ name: 'pci-baseline', controls: ['pci-1', 'pci-2'], agents: { match_labels: { pci: 'true' } } });
      expect(policy).toMatchObject({ name: 'pci-baseline', controls: ['pci-1', 'pci-2'], description: null });
      expect(await namesOf('early')).toEqual(['pci-1', 'pci-2']);
      expect(await namesOf('other')).toEqual([]);
      await store.upsertAgent({ agent_name: 'late', labels: { pci: 'true' } });
      expect(await namesOf('late')).toEqual(['pci-1', 'pci-2']);
      expect(await store.policyMembers(policy.policy_id)).toEqual(['early', 'late']);
      // A label change moves the agent out, and back in.
      await store.patchAgent('late', { labels: {} });
      expect(await namesOf('late')).toEqual([]);
      await store.patchAgent('late', { labels: { pci: 'true' } });
      expect(await namesOf('late')).toEqual(['pci-1', 'pci-2']);
    });

    it('binds a control once however many links and policies bind it, naming every source', async () => {
      const own = await store.getControlByName('own');
      const pci1 = await store.getControlByName('pci-1');
      await store.upsertAgent({ agent_name: 'bot', labels: { env: 'prod' } });
      await store.linkControl('bot', pci1!.control_id);
      await store.linkControl('bot', own!.control_id);
      await store.createPolicy({ name: 'a', controls: ['pci-1'], agents: { names: ['bot'] } });
      await store.createPolicy({ name: 'b', controls: ['pci-1', 'pci-2'], agents: { match_expressions: [{ key: 'env', operator: 'In', values: ['prod'] }] } });
      const set = await store.agentControlSet('bot');
      expect(set?.controls.map((c) => c.name)).toEqual(['pci-1', 'pci-2', 'own']);
      expect(set?.sources.get(pci1!.control_id)).toEqual(['link', 'policy:a', 'policy:b']);
      expect(set?.sources.get(own!.control_id)).toEqual(['link']);
      expect(await store.agentsOfControl(pci1!.control_id)).toEqual(['bot']);
    });

    it('names by agent name select agents that register later; match_labels {} selects all', async () => {
      await store.createPolicy({ name: 'named', controls: ['own'], agents: { names: ['future-bot'] } });
      await store.createPolicy({ name: 'all', controls: ['pci-2'], agents: { match_labels: {} } });
      await store.upsertAgent({ agent_name: 'future-bot' });
      await store.upsertAgent({ agent_name: 'someone' });
      expect(await namesOf('future-bot')).toEqual(['pci-2', 'own']);
      expect(await namesOf('someone')).toEqual(['pci-2']);
    });

    it('replaces a policy whole and reports every agent whose set changed', async () => {
      await store.upsertAgent({ agent_name: 'a', labels: { t: 'x' } });
      await store.upsertAgent({ agent_name: 'b', labels: { t: 'y' } });
      const p = await store.createPolicy({ name: 'p', controls: ['pci-1'], agents: { match_labels: { t: 'x' } } });
      const { policy, touched_agents } = await store.replacePolicy(p.policy_id, {
        name: 'p',
        description: 'now for y',
        controls: ['pci-2'],
        agents: { match_labels: { t: 'y' } },
      });
      expect(policy).toMatchObject({ description: 'now for y', controls: ['pci-2'] });
      expect(touched_agents).toEqual(['a', 'b']);
      expect(await namesOf('a')).toEqual([]);
      expect(await namesOf('b')).toEqual(['pci-2']);
      const page = await store.listPolicies({ limit: 10 });
      expect(page).toMatchObject({ total: 1, has_more: false });
      const { touched_agents: gone } = await store.deletePolicy(p.policy_id);
      expect(gone).toEqual(['b']);
      expect(await namesOf('b')).toEqual([]);
      const history = await store.policyHistory(p.policy_id, { limit: 10 });
      expect(history.entries.map((e) => [e.kind, e.op])).toEqual([
        ['policy', 'delete'],
        ['policy', 'update'],
        ['policy', 'create'],
      ]);
      expect(history.entries[0]?.policy_id).toBe(p.policy_id);
    });

    it('refuses unknown controls and duplicate names, writing nothing', async () => {
      const unknown = await store.createPolicy({ name: 'x', controls: ['nope'], agents: { names: ['a'] } }).catch((e: unknown) => e);
      expect(unknown).toBeInstanceOf(StoreError);
      expect((unknown as StoreError).kind).toBe('not_found');
      expect(await store.listAllPolicies()).toEqual([]);
      await store.createPolicy({ name: 'x', controls: ['own'], agents: { names: ['a'] } });
      const dup = await store.createPolicy({ name: 'x', controls: ['own'], agents: { names: ['a'] } }).catch((e: unknown) => e);
      expect((dup as StoreError).kind).toBe('conflict');
    });

    it('refuses to delete a control a policy binds, naming the policies; nothing changes', async () => {
      await store.upsertAgent({ agent_name: 'bot', labels: { a: 'b' } });
      const p = await store.createPolicy({ name: 'p', controls: ['pci-1', 'own'], agents: { match_labels: { a: 'b' } } });
      await store.createPolicy({ name: 'o', controls: ['pci-1'], agents: { names: ['nobody'] } });
      const pci1 = await store.getControlByName('pci-1');
      const revision = await store.revision();
      const refused = await store.deleteControl(pci1!.control_id).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(StoreError);
      expect((refused as StoreError).kind).toBe('conflict');
      expect((refused as StoreError).message).toContain('policies "o", "p" bind it');
      expect((refused as StoreError).issues).toEqual([{ field: 'control_id', code: 'bound_by_policy', message: 'bound by policies "o", "p"' }]);
      expect(await store.revision()).toBe(revision);
      expect(await store.getControlByName('pci-1')).not.toBeNull();
      expect((await store.getPolicy(p.policy_id))?.controls).toEqual(['pci-1', 'own']);
      expect(await namesOf('bot')).toEqual(['pci-1', 'own']);
      // Taken out of one policy and the other deleted, it goes.
      await store.replacePolicy(p.policy_id, { name: 'p', controls: ['own'], agents: { match_labels: { a: 'b' } } });
      const stillBound = await store.deleteControl(pci1!.control_id).catch((e: unknown) => e);
      expect((stillBound as StoreError).issues?.[0]?.message).toBe('bound by policy "o"');
      await store.applyChanges([{ op: 'delete_policy', name: 'o' }]);
      const { unlinked_agents } = await store.deleteControl(pci1!.control_id);
      expect(unlinked_agents).toEqual([]);
      expect(await namesOf('bot')).toEqual(['own']);
      await store.deleteAgent('bot');
      expect(await store.policyMembers(p.policy_id)).toEqual([]);
    });

    it('a control delete racing a policy that binds it: one of them is refused, never a policy bound to nothing', async () => {
      await store.upsertAgent({ agent_name: 'bot', labels: { race: 'yes' } });
      for (let i = 0; i < 12; i++) {
        const control = await store.createControl({ name: `racer-${i}`, data: controlData() });
        const [deleted, created] = await Promise.allSettled([
          store.deleteControl(control.control_id),
          store.createPolicy({ name: `race-${i}`, controls: ['own', `racer-${i}`], agents: { match_labels: { race: 'yes' } } }),
        ]);
        expect([deleted.status, created.status].sort(), `round ${i}`).toEqual(['fulfilled', 'rejected']);
        const refusal = (deleted.status === 'rejected' ? deleted.reason : (created as PromiseRejectedResult).reason) as StoreError;
        expect(refusal).toBeInstanceOf(StoreError);
        if (deleted.status === 'rejected') {
          expect(refusal.issues?.[0]?.code).toBe('bound_by_policy');
          expect((await store.getPolicyByName(`race-${i}`))?.controls).toEqual(['own', `racer-${i}`]);
        } else {
          expect(refusal.message).toBe(`control "racer-${i}" does not exist`);
          expect(await store.getPolicyByName(`race-${i}`)).toBeNull();
        }
      }
    });

    it('a batch deleting a bound control is refused whole unless it first unbinds it', async () => {
      await store.upsertAgent({ agent_name: 'bot', labels: { a: 'b' } });
      await store.createPolicy({ name: 'p', controls: ['pci-1'], agents: { match_labels: { a: 'b' } } });
      const refused = await store
        .applyChanges([
          { op: 'create_control', control: { name: 'fresh', data: controlData() } },
          { op: 'delete_control', name: 'pci-1' },
        ])
        .catch((e: unknown) => e);
      expect((refused as StoreError).failedChange?.index).toBe(1);
      expect((refused as StoreError).issues?.[0]?.code).toBe('bound_by_policy');
      expect(await store.getControlByName('fresh')).toBeNull();
      // The store runs a batch in its order: a delete before the unbinding is refused too.
      const early = await store
        .applyChanges([
          { op: 'delete_control', name: 'pci-1' },
          { op: 'delete_policy', name: 'p' },
        ])
        .catch((e: unknown) => e);
      expect((early as StoreError).failedChange?.index).toBe(0);
      expect(await namesOf('bot')).toEqual(['pci-1']);
      // Policy update before the control delete (GitOps' order): the batch converges.
      const applied = await store.applyChanges([
        { op: 'upsert_policy', policy: { name: 'p', controls: ['pci-2'], agents: { match_labels: { a: 'b' } } } },
        { op: 'delete_control', name: 'pci-1' },
      ]);
      expect(applied.touched_agents).toEqual(['bot']);
      expect(await namesOf('bot')).toEqual(['pci-2']);
      await store.applyChanges([
        { op: 'delete_policy', name: 'p' },
        { op: 'delete_control', name: 'pci-2' },
      ]);
      expect(await store.getControlByName('pci-2')).toBeNull();
    });

    it('a registration cannot take an agent out of a policy selecting it; an administrator write can', async () => {
      await store.upsertAgent({ agent_name: 'pay', labels: { pci: 'true', team: 'a' } });
      await store.createPolicy({ name: 'pci', controls: ['pci-1'], agents: { match_labels: { pci: 'true' } } });
      await store.createPolicy({ name: 'sandboxed', controls: ['pci-2'], agents: { match_expressions: [{ key: 'sandbox', operator: 'DoesNotExist' }] } });
      const revision = await store.revision();
      const escapes: Array<Record<string, string>> = [{}, { pci: 'false' }, { PCI: 'true' }, { 'pci ': 'true' }, { pci: 'true', sandbox: 'x' }];
      for (const labels of escapes) {
        const refused = await store.upsertAgent({ agent_name: 'pay', labels }, undefined, { registration: true }).catch((e: unknown) => e);
        expect(refused, JSON.stringify(labels)).toBeInstanceOf(StoreError);
        expect((refused as StoreError).kind).toBe('conflict');
        expect((refused as StoreError).issues?.[0]?.code).toBe('leaves_policy');
      }
      const both = await store.upsertAgent({ agent_name: 'pay', labels: { sandbox: 'x' } }, undefined, { registration: true }).catch((e: unknown) => e);
      expect((both as StoreError).issues?.[0]?.message).toBe('the labels leave "pci", "sandboxed"');
      expect(await store.revision()).toBe(revision);
      expect((await store.getAgent('pay'))?.labels).toEqual({ pci: 'true', team: 'a' });
      expect(await namesOf('pay')).toEqual(['pci-1', 'pci-2']);
      // Labels that keep every policy, and a new agent with any labels, are registrations like any other.
      await store.upsertAgent({ agent_name: 'pay', labels: { pci: 'true', team: 'b' } }, undefined, { registration: true });
      await store.upsertAgent({ agent_name: 'new', labels: { sandbox: 'x' } }, undefined, { registration: true });
      // A registration without labels keeps the stored ones as its own write reads them
      // (an administrator's change made since the caller looked is neither undone nor refused).
      await store.patchAgent('pay', { labels: { pci: 'true', team: 'c' } });
      const kept = await store.upsertAgent({ agent_name: 'pay', agent_version: '2' }, undefined, { registration: true });
      expect(kept.agent.labels).toEqual({ pci: 'true', team: 'c' });
      // Not a registration (an apply, an administrator): the agent moves out.
      await store.upsertAgent({ agent_name: 'pay', labels: {} });
      expect(await namesOf('pay')).toEqual(['pci-2']);
    });

    it('applies policy changes in a batch, with the agents they touch', async () => {
      const applied = await store.applyChanges([
        { op: 'upsert_policy', policy: { name: 'base', controls: ['own'], agents: { match_labels: { tier: 'a' } } } },
        { op: 'upsert_agent', agent: { agent_name: 'x', labels: { tier: 'a' } } },
        { op: 'upsert_agent', agent: { agent_name: 'y', labels: { tier: 'b' } } },
      ]);
      expect(applied.touched_agents).toEqual(['x', 'y']);
      expect(await namesOf('x')).toEqual(['own']);
      const removed = await store.applyChanges([{ op: 'delete_policy', name: 'base' }]);
      expect(removed.touched_agents).toEqual(['x']);
      expect(await namesOf('x')).toEqual([]);
      const failed = await store.applyChanges([{ op: 'upsert_policy', policy: { name: 'bad', controls: ['missing'], agents: { names: ['x'] } } }]).catch((e: unknown) => e);
      expect((failed as StoreError).failedChange?.index).toBe(0);
    });
  });
}
