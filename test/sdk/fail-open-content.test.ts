/**
 * failMode 'open' lets a step go on when the server cannot be reached or fails (issue
 * #34.8). A refusal caused by the step's own content (a body over the server's limit, a
 * step the server finds invalid) is not an outage: a model that writes such a step must
 * not get it through. Those are denied whatever the fail mode, and the error says why.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GuardClient, GuardUnavailableError, init, type GuardAgent } from '../../src/sdk/index.js';
import { startTestServer } from '../support/server.js';
import { addControl } from './real-server.js';

const LIMIT = 4096;
let url: string;
let close: () => Promise<void>;
const agents: GuardAgent[] = [];
const warnings: string[] = [];

beforeEach(async () => {
  const server = await startTestServer({ config: { observabilityEnabled: false, bodyLimitBytes: LIMIT }, listen: true });
  url = server.url;
  close = server.close;
  const client = new GuardClient({ serverUrl: url });
  await client.initAgent({ agent_name: 'bot' });
  await addControl(client, 'bot', 'block-drop', {
    execution: 'server',
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
    action: { decision: 'deny' },
  });
});
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.shutdown();
  await close();
  warnings.length = 0;
});

async function openAgent(): Promise<GuardAgent> {
  const agent = await init({ agentName: 'bot', serverUrl: url, refreshIntervalSeconds: 0, events: false, failMode: 'open', logger: { info: () => undefined, warn: (m) => warnings.push(m) } });
  agents.push(agent);
  return agent;
}

describe("failMode 'open' and refusals caused by the step", () => {
  it('a step larger than the server accepts is denied, and the error names the limit', async () => {
    const agent = await openAgent();
    const step = { type: 'tool' as const, name: 'run_sql', input: { query: 'DROP TABLE users', pad: 'x'.repeat(2 * LIMIT) } };
    const error = await agent.check(step, 'pre').then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(GuardUnavailableError);
    expect((error as Error).message).toMatch(/413|larger than/);
    expect((error as Error).message).toContain(String(LIMIT));
    const verdict = await agent.verdict(step, 'pre');
    expect(verdict.decision).toBe('deny');
  });

  it('a step the server finds invalid (422) is denied', async () => {
    const agent = await openAgent();
    const step = { type: 'tool' as const, name: 'run_sql', input: { query: 'DROP TABLE users' }, context: ['not', 'an', 'object'] as unknown as Record<string, unknown> };
    await expect(agent.check(step, 'pre')).rejects.toBeInstanceOf(GuardUnavailableError);
    expect((await agent.verdict(step, 'pre')).decision).toBe('deny');
  });

  it('a step with __proto__ keys is evaluated, and denied by the control', async () => {
    const agent = await openAgent();
    const input = JSON.parse('{"query":"DROP TABLE users","__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect((await agent.verdict({ type: 'tool', name: 'run_sql', input }, 'pre')).decision).toBe('deny');
  });

  it('an unreachable server still lets the step go on (that is what open means)', async () => {
    const agent = await openAgent();
    await close();
    const result = await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
    expect(result.decision).toBe('allow');
    expect(warnings.some((w) => w.includes('failMode is open'))).toBe(true);
  });
});
