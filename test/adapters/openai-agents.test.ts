/**
 * guardctl/openai-agents against the real @openai/agents runner, driven by a scripted
 * model that implements the SDK's Model interface: what the model reads after a reject is
 * the tool output in the input of its next call.
 */
import {
  Agent,
  Runner,
  setTracingDisabled,
  tool,
  ToolCallError,
  ToolInputGuardrailTripwireTriggered,
  Usage,
  type Model,
  type ModelRequest,
  type ModelResponse,
} from '@openai/agents';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { guardrailsFor, type GuardDecision, type GuardrailsOptions } from '../../src/adapters/openai-agents.js';
import { startGuarded, type GuardedSetup } from './guarded-agent.js';

type Output = ModelResponse['output'][number];

function callTool(name: string, args: object, callId = 'call-1'): Output {
  return { type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' };
}

function say(text: string): Output {
  return { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] };
}

/** A Model that answers with one scripted output per call and keeps what it was given. */
class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = [];
  #turn = 0;
  constructor(private readonly script: Output[]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const next = this.script[this.#turn++];
    if (!next) throw new Error('the script has no more turns');
    return { usage: new Usage(), output: [next] };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not scripted for streaming');
  }

  /** The tool output the model was given on its last call. */
  lastToolOutput(): string {
    const input = this.requests.at(-1)!.input;
    const items = typeof input === 'string' ? [] : input;
    const outputs = items.filter((i) => i.type === 'function_call_result');
    return JSON.stringify(outputs.at(-1) ?? null);
  }
}

let setup: GuardedSetup;
beforeAll(() => setTracingDisabled(true));
beforeEach(async () => {
  setup = await startGuarded();
});
afterEach(async () => {
  await setup.close();
});

function agentWith(model: Model, options: GuardrailsOptions = {}) {
  const runSql = vi.fn(async ({ query }: { query: string }) => (query.includes('keys') ? 'AKIAQWERTYUIOPASDF7Z' : `3 rows for ${query}`));
  const guardrails = guardrailsFor(setup.guard, options);
  const agent = new Agent({
    name: 'analyst',
    model,
    tools: [tool({ name: 'run_sql', description: 'run SQL', parameters: z.object({ query: z.string() }), execute: runSql, ...guardrails })],
  });
  return { agent, runSql };
}

const runner = () => new Runner({ tracingDisabled: true });

describe('guardrailsFor', () => {
  it('allows a harmless call', async () => {
    const model = new ScriptedModel([callTool('run_sql', { query: 'select 1' }), say('3 rows')]);
    const { agent, runSql } = agentWith(model);
    const result = await runner().run(agent, 'count');
    expect(runSql).toHaveBeenCalledTimes(1);
    expect(result.finalOutput).toBe('3 rows');
    expect(model.lastToolOutput()).toContain('3 rows for select 1');
  });

  it('rejects a denied call: the tool never runs and the model reads why', async () => {
    const decisions: GuardDecision[] = [];
    const model = new ScriptedModel([callTool('run_sql', { query: 'DROP TABLE orders' }), say('I may not.')]);
    const { agent, runSql } = agentWith(model, { onDecision: (d) => decisions.push(d) });
    const result = await runner().run(agent, 'clean up');
    expect(runSql).not.toHaveBeenCalled();
    expect(result.finalOutput).toBe('I may not.');
    expect(model.lastToolOutput()).toContain('Blocked by control \\"block-drop\\"');
    expect(decisions.map((d) => [d.step.name, d.stage, d.verdict.decision])).toEqual([['run_sql', 'pre', 'deny']]);
  });

  it('replaces an output a post control denies', async () => {
    const model = new ScriptedModel([callTool('run_sql', { query: 'select keys' }), say('withheld')]);
    const { agent, runSql } = agentWith(model);
    await runner().run(agent, 'keys?');
    expect(runSql).toHaveBeenCalledTimes(1);
    expect(model.lastToolOutput()).toContain('its result is withheld');
    expect(model.lastToolOutput()).not.toContain('AKIA');
  });

  it('steers with the steering message and the required actions', async () => {
    const model = new ScriptedModel([callTool('deploy', { environment: 'production' }), say('will dry-run')]);
    const deploy = vi.fn(async () => 'deployed');
    const agent = new Agent({
      name: 'ops',
      model,
      tools: [tool({ name: 'deploy', description: 'deploy', parameters: z.object({ environment: z.string() }), execute: deploy, ...guardrailsFor(setup.guard) })],
    });
    await runner().run(agent, 'ship');
    expect(deploy).not.toHaveBeenCalled();
    expect(model.lastToolOutput()).toContain('Production deploys need a dry run first.');
    expect(model.lastToolOutput()).toContain('- call deploy with dry_run=true');
  });

  it("with deny: 'throw', a deny ends the run with the SDK's tripwire error", async () => {
    const model = new ScriptedModel([callTool('run_sql', { query: 'DROP TABLE orders' }), say('unreachable')]);
    const { agent, runSql } = agentWith(model, { deny: 'throw' });
    const error = await runner().run(agent, 'clean up').catch((e: unknown) => e);
    // The runner reports it as a failed tool call whose error is the tripwire.
    expect(error).toBeInstanceOf(ToolCallError);
    expect((error as ToolCallError).error).toBeInstanceOf(ToolInputGuardrailTripwireTriggered);
    expect(runSql).not.toHaveBeenCalled();
  });

  it('fails closed when the guard server is down', async () => {
    const model = new ScriptedModel([callTool('deploy', { environment: 'staging' }), say('could not')]);
    const deploy = vi.fn(async () => 'deployed');
    const agent = new Agent({
      name: 'ops',
      model,
      tools: [tool({ name: 'deploy', description: 'deploy', parameters: z.object({ environment: z.string() }), execute: deploy, ...guardrailsFor(setup.guard) })],
    });
    await setup.server.close();
    await runner().run(agent, 'ship');
    expect(deploy).not.toHaveBeenCalled();
    expect(model.lastToolOutput()).toContain('could not check this call');
  });
});

describe('guardrailsFor and a tool with no parameters (issue #35 item 2)', () => {
  // The SDK itself refuses arguments that are not JSON (an empty string) before any guardrail runs.
  for (const sent of ['{}']) {
    it(`runs it when the model sends ${JSON.stringify(sent)} as its arguments, checked pre and post`, async () => {
      const listOrders = vi.fn(async () => '3 orders');
      const decisions: GuardDecision[] = [];
      const model = new ScriptedModel([
        { type: 'function_call', callId: 'call-1', name: 'list_orders', arguments: sent, status: 'completed' },
        say('done'),
      ]);
      const agent = new Agent({
        name: 'analyst',
        model,
        tools: [tool({ name: 'list_orders', description: 'list orders', parameters: z.object({}), execute: listOrders, ...guardrailsFor(setup.guard, { onDecision: (d) => decisions.push(d) }) })],
      });
      const result = await runner().run(agent, 'list');
      expect(listOrders).toHaveBeenCalledTimes(1);
      expect(result.finalOutput).toBe('done');
      expect(decisions.map((d) => [d.stage, d.verdict.decision, d.verdict.unavailable])).toEqual([['pre', 'allow', false], ['post', 'allow', false]]);
      expect(decisions[0]!.step.input).toEqual({});
    });
  }
});
