/**
 * Issue #34 item 10: a typo in an agent name must not disable every guard. `init` for an
 * agent with no controls (unknown, or known with none in force) is refused, naming the
 * known agents close to it, unless the caller opts in with `allowUnguarded: true`; and a
 * refused start registers nothing.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, init, UnguardedAgentError, type GuardAgent, type GuardLogger } from '../../src/sdk/index.js';
import { blockDrop, quietLogger } from '../adapters/guarded-agent.js';
import { addControl, startRealServer, type RunningServer } from './real-server.js';

let server: RunningServer;
const started: GuardAgent[] = [];

beforeEach(async () => {
  server = await startRealServer();
  await server.client.initAgent({ agent_name: 'data-analyst' });
  await addControl(server.client, 'data-analyst', 'block-drop', blockDrop);
  await server.client.initAgent({ agent_name: 'support-bot' });
  await addControl(server.client, 'support-bot', 'block-drop-support', blockDrop);
});

afterEach(async () => {
  for (const agent of started.splice(0)) await agent.shutdown();
  await server.close();
});

async function start(agentName: string, extra: { allowUnguarded?: boolean; logger?: GuardLogger } = {}): Promise<GuardAgent> {
  const agent = await init({ agentName, serverUrl: server.url, refreshIntervalSeconds: 0, logger: quietLogger, ...extra });
  started.push(agent);
  return agent;
}

async function refusal(agentName: string): Promise<UnguardedAgentError> {
  const error = await start(agentName).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(UnguardedAgentError);
  return error as UnguardedAgentError;
}

const agentNames = async (): Promise<string[]> => (await server.client.listAgents()).map((a) => a.agent_name);

describe('init for an agent with no controls', () => {
  it('refuses a misspelt agent, names the agent and the known one close to it, and registers nothing', async () => {
    const error = await refusal('data-analsyt');
    expect(error.message).toContain('"data-analsyt"');
    expect(error.message).toContain('did you mean "data-analyst"?');
    expect(error.message).toContain('allowUnguarded');
    expect(error.agentName).toBe('data-analsyt');
    expect(error.suggestions).toEqual(['data-analyst']);
    expect(await agentNames()).not.toContain('data-analsyt');
  });

  it('refuses the look-alike spellings an attacker or a tired hand writes', async () => {
    for (const name of ['data-anaIyst', 'data_analyst', 'data-analyst2', 'dataanalyst']) {
      const error = await refusal(name);
      expect(error.suggestions, name).toContain('data-analyst');
    }
    // A look-alike letter from another script is not a valid agent name: refused as such.
    const homoglyph = await start('data-\u0430nalyst').catch((e: unknown) => e);
    expect(homoglyph).toBeInstanceOf(ApiError);
    expect((await agentNames()).sort()).toEqual(['data-analyst', 'support-bot']);
  });

  it('accepts the name in another case or with spaces around it: the server normalises names', async () => {
    const agent = await start('  Data-Analyst ');
    expect(agent.controls.map((c) => c.name)).toEqual(['block-drop']);
  });

  it('refuses a known agent with no controls, or only disabled ones', async () => {
    await server.client.initAgent({ agent_name: 'bare-bot' });
    expect((await refusal('bare-bot')).message).toContain('has no controls');
    await server.client.initAgent({ agent_name: 'off-bot' });
    const id = await addControl(server.client, 'off-bot', 'off', blockDrop);
    await server.client.patchControl(id, { enabled: false });
    expect((await refusal('off-bot')).message).toContain('"off-bot"');
  });

  it('refuses an agent whose only controls are in shadow mode (they never block)', async () => {
    await server.client.initAgent({ agent_name: 'shadow-bot' });
    await addControl(server.client, 'shadow-bot', 'shadow-drop', { ...blockDrop, mode: 'shadow' });
    await refusal('shadow-bot');
  });

  it('starts with allowUnguarded: true, registers the agent and says so in a warning', async () => {
    const warnings: string[] = [];
    const agent = await start('new-bot', { allowUnguarded: true, logger: { info: () => undefined, warn: (m) => warnings.push(m) } });
    expect(agent.controls).toEqual([]);
    expect(await agentNames()).toContain('new-bot');
    expect(warnings.join('\n')).toContain('agent "new-bot" has no controls');
  });
});
