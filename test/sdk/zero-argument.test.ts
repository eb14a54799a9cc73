/**
 * Issue #35 item 2: a step with no argument. A tool called with nothing (`guard.control(async
 * () => ...)()`, a check of a step without `input`) is a step whose input is null: it is
 * checked like any other, on the server too, and never refused as unavailable.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ControlViolationError, GuardUnavailableError, init, type GuardAgent } from '../../src/sdk/index.js';
import { quietLogger } from '../adapters/guarded-agent.js';
import { addControl, startRealServer, type RunningServer } from './real-server.js';

const AGENT = 'no-args-bot';
let server: RunningServer;
let agent: GuardAgent;

beforeEach(async () => {
  server = await startRealServer();
  await server.client.initAgent({ agent_name: AGENT });
  // Server-side controls in scope of every tool step, so that each check asks the server.
  await addControl(server.client, AGENT, 'deny-wipe', {
    scope: { step_types: ['tool'], stages: ['pre'] },
    selector: { path: 'name' },
    evaluator: { name: 'regex', config: { pattern: '^wipe_' } },
    action: { decision: 'deny' },
  });
  await addControl(server.client, AGENT, 'deny-secret-output', {
    scope: { step_types: ['tool'], stages: ['post'] },
    selector: { path: 'output' },
    evaluator: { name: 'regex', config: { pattern: 'AKIA[0-9A-Z]{16}' } },
    action: { decision: 'deny' },
  });
  agent = await init({ agentName: AGENT, serverUrl: server.url, refreshIntervalSeconds: 0, logger: quietLogger });
});

afterEach(async () => {
  await agent.shutdown();
  await server.close();
});

describe('a tool with no argument', () => {
  it('runs through control() and is checked pre and post on the server', async () => {
    const listOrders = vi.fn(async () => '3 orders');
    const guarded = agent.control(listOrders, { stepName: 'list_orders', type: 'tool' });
    await expect(guarded()).resolves.toBe('3 orders');
    expect(listOrders).toHaveBeenCalledTimes(1);
  });

  it('is denied, not refused as unavailable, when a control matches it', async () => {
    const wipe = vi.fn(async () => 'wiped');
    const error = await agent.control(wipe, { stepName: 'wipe_all', type: 'tool' })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControlViolationError);
    expect(error).not.toBeInstanceOf(GuardUnavailableError);
    expect(wipe).not.toHaveBeenCalled();
  });

  it('has its output checked: a secret from a zero-argument tool is withheld', async () => {
    const leak = agent.control(async () => 'AKIAQWERTYUIOPASDF7Z', { stepName: 'read_keys', type: 'tool' });
    await expect(leak()).rejects.toBeInstanceOf(ControlViolationError);
  });

  it('check() and evaluate() of a step without input, or with input undefined, send input null', async () => {
    const sent: unknown[] = [];
    const recording = await init({
      agentName: AGENT, serverUrl: server.url, refreshIntervalSeconds: 0, logger: quietLogger,
      fetch: async (url, requestInit) => {
        if ((url instanceof Request ? url.url : url.toString()).endsWith('/evaluation') && typeof requestInit?.body === 'string') sent.push(JSON.parse(requestInit.body));
        return fetch(url, requestInit);
      },
    });
    try {
      await expect(recording.check({ type: 'tool', name: 'list_orders', input: undefined }, 'pre')).resolves.toMatchObject({ decision: 'allow' });
      const bare = { type: 'tool', name: 'list_orders' } as unknown as Parameters<GuardAgent['check']>[0];
      await expect(recording.check(bare, 'pre')).resolves.toMatchObject({ decision: 'allow' });
      expect(sent).toHaveLength(2);
      for (const body of sent) expect((body as { step: { input: unknown } }).step.input).toBeNull();
    } finally {
      await recording.shutdown();
    }
  });
});

describe('the server and a step without input', () => {
  async function evaluate(step: Record<string, unknown>): Promise<Response> {
    return fetch(`${server.url}/api/v1/evaluation`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agent_name: AGENT, stage: 'pre', step }),
    });
  }

  it('evaluates a step with input absent as a step with input null (200, not 422)', async () => {
    const absent = await evaluate({ type: 'tool', name: 'wipe_all' });
    expect(absent.status).toBe(200);
    expect(await absent.json()).toMatchObject({ decision: 'deny' });
    const allowed = await evaluate({ type: 'tool', name: 'list_orders' });
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toMatchObject({ decision: 'allow' });
  });

  it('gives a whole-input selector null to look at, the same as an explicit null', async () => {
    await addControl(server.client, AGENT, 'deny-null-input-of-reset', {
      scope: { step_types: ['tool'], step_names: ['reset'], stages: ['pre'] },
      selector: { path: '*' },
      evaluator: { name: 'regex', config: { pattern: '"input":null' } },
      action: { decision: 'deny' },
    });
    for (const step of [{ type: 'tool', name: 'reset' }, { type: 'tool', name: 'reset', input: null }]) {
      const answer = await evaluate(step);
      expect(answer.status).toBe(200);
      expect(await answer.json()).toMatchObject({ decision: 'deny' });
    }
  });

  it('still refuses a step without a type or a name', async () => {
    expect((await evaluate({ name: 'list_orders' })).status).toBe(422);
    expect((await evaluate({ type: 'tool' })).status).toBe(422);
  });
});
