// The SDK and policies: a new agent registering with labels a policy selects starts guarded
// (no UnguardedAgentError), and its refresh follows the policy.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlViolationError, init, UnguardedAgentError, type GuardAgent } from '../../src/sdk/index.js';
import { startRealServer, type RunningServer } from './real-server.js';

let server: RunningServer;
const agents: GuardAgent[] = [];

beforeEach(async () => {
  server = await startRealServer();
  await server.client.createControl({
    name: 'no-drop',
    data: {
      execution: 'sdk',
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
      action: { decision: 'deny' },
    },
  });
});

afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.shutdown();
  await server.close();
});

const start = async (agentName: string, labels?: Record<string, string>) => {
  const agent = await init({ agentName, serverUrl: server.url, refreshIntervalSeconds: 0, labels, logger: { info: () => {}, warn: () => {} } });
  agents.push(agent);
  return agent;
};
const drop = { type: 'tool' as const, name: 'run_sql', input: { query: 'DROP TABLE users' } };

describe('SDK with policies', () => {
  it('a new agent with labels a policy selects starts guarded; refresh follows the policy', async () => {
    const policy = await server.client.policies.create({ name: 'pci', controls: ['no-drop'], agents: { match_labels: { pci: 'true' } } });
    const agent = await start('pay-bot', { pci: 'true' });
    expect(agent.controls.map((c) => c.name)).toEqual(['no-drop']);
    await expect(agent.check(drop, 'pre')).rejects.toBeInstanceOf(ControlViolationError);
    expect((await server.client.getAgent('pay-bot')).labels).toEqual({ pci: 'true' });

    await server.client.policies.delete(policy.policy_id);
    expect(await agent.refresh()).toEqual([]);
  });

  it('labels no policy selects still refuse to start an unguarded agent', async () => {
    await server.client.policies.create({ name: 'pci', controls: ['no-drop'], agents: { match_labels: { pci: 'true' } } });
    const error = await start('other-bot', { pci: 'false' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnguardedAgentError);
    // Checked before registering: nothing was stored.
    expect((await server.client.listAgents()).map((a) => a.agent_name)).toEqual([]);
  });

  it('lists agents by label through the client', async () => {
    await server.client.initAgent({ agent_name: 'a', labels: { team: 'x' } });
    await server.client.initAgent({ agent_name: 'b', labels: { team: 'y', tier: 'gold' } });
    expect((await server.client.listAgents(['team=y'])).map((a) => a.agent_name)).toEqual(['b']);
    expect((await server.client.listAgents(['team', 'tier=gold'])).map((a) => a.agent_name)).toEqual(['b']);
  });
});
