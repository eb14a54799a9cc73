/**
 * The framework adapters on a step an ask control holds when they wait for the decision
 * (AI SDK `approval: 'wait'`; OpenAI Agents guardrails without `toolName`), with each framework's own mock
 * model: the AI SDK's MockLanguageModelV3 and a scripted @openai/agents Model. The tool
 * runs once a person approves through the API; a denial reaches the model as the tool's
 * error and the tool never runs.
 */
import { Agent, Runner, tool as agentTool, Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { generateText, stepCountIs, tool } from 'ai';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { guardTools } from '../../src/adapters/ai-sdk.js';
import { guardrailsFor } from '../../src/adapters/openai-agents.js';
import { init, type GuardAgent } from '../../src/sdk/index.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';
import { quietLogger } from './guarded-agent.js';
import { done, scripted, type GenerateResult, usage } from './mock-models.js';


let server: RunningServer;
let guard: GuardAgent;
beforeEach(async () => {
  server = await startRealServer();
  await server.client.initAgent({ agent_name: 'payer' });
  await addControl(server.client, 'payer', 'large-payments', {
    scope: { step_types: ['tool'], step_names: ['pay'], stages: ['pre'] },
    selector: { path: 'input.amount' },
    evaluator: { name: 'regex', config: { pattern: '^[1-9][0-9]{4,}$' } },
    action: { decision: 'ask' },
  });
  guard = await init({ agentName: 'payer', serverUrl: server.url, events: false, refreshIntervalSeconds: 0, logger: quietLogger });
});
afterEach(async () => {
  await guard.shutdown();
  await server.close();
});

/** Decides the first pending approval once it appears. */
async function decideNext(verb: 'approve' | 'deny', reason?: string): Promise<void> {
  for (;;) {
    const [pending] = await server.client.approvals.list({ status: 'pending', limit: 1 });
    if (pending) {
      await (verb === 'approve' ? server.client.approvals.approve(pending.id) : server.client.approvals.deny(pending.id, reason));
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const payCall = (amount: number): GenerateResult => ({
  content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'pay', input: JSON.stringify({ amount }) }],
  finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [],
});

describe('AI SDK tools on an ask, approval: wait', () => {
  it('waits for the approval, then runs the tool once', async () => {
    const pay = vi.fn(async ({ amount }: { amount: number }) => `paid ${amount}`);
    const tools = guardTools(guard, { pay: tool({ description: 'pay', inputSchema: z.object({ amount: z.number() }), execute: pay }) }, { approval: 'wait' });
    const [result] = await Promise.all([generateText({ model: scripted(payCall(82_000), done), tools, stopWhen: stepCountIs(3), prompt: 'pay' }), decideNext('approve')]);
    expect(pay).toHaveBeenCalledTimes(1);
    expect(JSON.stringify(result.steps[0]!.content)).toContain('paid 82000');
  });

  it('a denial is the tool error the model reads; the tool never runs', async () => {
    const pay = vi.fn(async () => 'paid');
    const tools = guardTools(guard, { pay: tool({ description: 'pay', inputSchema: z.object({ amount: z.number() }), execute: pay }) }, { approval: 'wait' });
    const model = scripted(payCall(90_000), done);
    await Promise.all([generateText({ model, tools, stopWhen: stepCountIs(3), prompt: 'pay' }), decideNext('deny', 'over budget')]);
    expect(pay).not.toHaveBeenCalled();
    const toolMessage = model.doGenerateCalls.at(-1)!.prompt.findLast((m) => m.role === 'tool');
    expect(JSON.stringify(toolMessage)).toContain('a person denied this call');
    expect(JSON.stringify(toolMessage)).toContain('over budget');
  });
});

class ScriptedModel implements Model {
  #turn = 0;
  constructor(private readonly script: ModelResponse['output'][number][]) {}
  async getResponse(_request: ModelRequest): Promise<ModelResponse> {
    return { usage: new Usage(), output: [this.script[this.#turn++]!] };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not scripted for streaming');
  }
}

describe('OpenAI Agents tools on an ask without toolName (waits)', () => {
  it('waits for the approval, then runs the tool', async () => {
    const pay = vi.fn(async ({ amount }: { amount: number }) => `paid ${amount}`);
    const model = new ScriptedModel([
      { type: 'function_call', callId: 'c1', name: 'pay', arguments: JSON.stringify({ amount: 75_000 }), status: 'completed' },
      { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] },
    ]);
    const agent = new Agent({ name: 'payer', model, tools: [agentTool({ name: 'pay', description: 'pay', parameters: z.object({ amount: z.number() }), execute: pay, ...guardrailsFor(guard) })] });
    const [result] = await Promise.all([new Runner({ tracingDisabled: true }).run(agent, 'pay'), decideNext('approve')]);
    expect(pay).toHaveBeenCalledTimes(1);
    expect(result.finalOutput).toBe('done');
  });
});
