/**
 * An ask through the frameworks' own human-in-the-loop, against a real server with keys:
 * the AI SDK's tool approval (MockLanguageModelV3) and the OpenAI Agents SDK's
 * interruptions (a scripted Model). The framework's "approved" runs the tool only when
 * guardctl's approval of that exact call is approved, once; the agent's own key cannot
 * approve; a call whose input was changed after the approval asks again.
 */
import { Agent, Runner, tool as agentTool, Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import type { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { decideApproval, guardApprovalOf, guardTools } from '../../src/adapters/ai-sdk.js';
import { guardApprovalOf as agentsApprovalOf, guardrailsFor } from '../../src/adapters/openai-agents.js';
import { GuardClient } from '../../src/client/index.js';
import { ApiError } from '../../src/errors.js';
import { init, type GuardAgent } from '../../src/sdk/index.js';
import { ADMIN, APPROVER, KEYS, REGULAR, seedPayments } from '../approvals/helpers.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { quietLogger } from './guarded-agent.js';
import { scripted, type GenerateResult, usage } from './mock-models.js';


let server: TestServer;
let admin: GuardClient;
let guard: GuardAgent;
beforeEach(async () => {
  server = await startTestServer({ env: KEYS, listen: true });
  await seedPayments(server.app, { 'x-api-key': ADMIN });
  admin = new GuardClient({ serverUrl: server.url, apiKey: ADMIN });
  // `throw`: a call whose approval is still pending fails at once instead of waiting.
  guard = await init({ agentName: 'payer', serverUrl: server.url, apiKey: REGULAR, approval: 'throw', events: false, refreshIntervalSeconds: 0, logger: quietLogger });
});
afterEach(async () => {
  await guard.shutdown();
  await server.close();
});

const payCall = (amount: number, id = 'c1'): GenerateResult => ({
  content: [{ type: 'tool-call', toolCallId: id, toolName: 'pay', input: JSON.stringify({ amount }) }],
  finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [],
});
const done = (): GenerateResult => ({ content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] });

function payTools(pay: (input: { amount: number }) => Promise<string>) {
  return guardTools(guard, { pay: tool({ description: 'pay', inputSchema: z.object({ amount: z.number() }), execute: pay }) });
}

/** The messages of the next call: the conversation so far and the application's answer to the approval request. */
function answered(prompt: ModelMessage[], response: ModelMessage[], approvalId: string, approved: boolean): ModelMessage[] {
  return [...prompt, ...response, { role: 'tool', content: [{ type: 'tool-approval-response', approvalId, approved }] }];
}

const toolText = (model: MockLanguageModelV3): string => JSON.stringify(model.doGenerateCalls.at(-1)!.prompt.filter((m) => m.role === 'tool'));

describe('AI SDK tool approval on an ask', () => {
  it('asks through the tool approval; the framework\'s yes runs the tool only once guardctl approved, and only once', async () => {
    const pay = vi.fn(async ({ amount }: { amount: number }) => `paid ${amount}`);
    const tools = payTools(pay);
    const prompt: ModelMessage[] = [{ role: 'user', content: 'pay the invoice' }];
    const first = await generateText({ model: scripted(payCall(82_000)), tools, messages: prompt, stopWhen: stepCountIs(3) });
    const request = first.content.find((p) => p.type === 'tool-approval-request');
    expect(request).toBeDefined();
    expect(pay).not.toHaveBeenCalled();
    const approval = guardApprovalOf(guard, request!)!;
    const [pending] = await admin.approvals.list({ status: 'pending' });
    expect(approval).toMatchObject({ id: pending!.id, status: 'pending', tool_name: 'pay' });

    // The application says yes in the framework, but nobody approved in guardctl: not run.
    const messages = answered(prompt, first.response.messages, request!.approvalId, true);
    const early = scripted(done());
    await generateText({ model: early, tools, messages, stopWhen: stepCountIs(3) });
    expect(pay).not.toHaveBeenCalled();
    expect(toolText(early)).toContain(`approval ${approval.id} is pending`);

    // The agent's own key cannot approve: 403, and still nothing runs.
    const selfApproval = await decideApproval(guard, approval, 'approve', { apiKey: REGULAR }).catch((e: unknown) => e);
    expect(selfApproval).toBeInstanceOf(ApiError);
    expect((selfApproval as ApiError).status).toBe(403);

    // A person approves with the approver key: the same answer now runs the tool, once.
    await decideApproval(guard, approval, 'approve', { apiKey: APPROVER, reason: 'Q4 invoice' });
    const after = scripted(done());
    const resumed = await generateText({ model: after, tools, messages, stopWhen: stepCountIs(3) });
    expect(pay).toHaveBeenCalledTimes(1);
    expect(pay).toHaveBeenCalledWith({ amount: 82_000 }, expect.anything());
    expect(toolText(after)).toContain('paid 82000');
    expect(resumed.text).toBe('done');
    expect((await admin.approvals.get(approval.id)).used_at).not.toBeNull();

    // Replaying the answered conversation does not pay twice: the approval was used.
    const replay = scripted(done());
    await generateText({ model: replay, tools, messages, stopWhen: stepCountIs(3) });
    expect(pay).toHaveBeenCalledTimes(1);
    expect(toolText(replay)).toContain('Waiting for approval');
  });

  it('an approved call whose input is changed in the conversation asks again instead of running', async () => {
    const pay = vi.fn(async ({ amount }: { amount: number }) => `paid ${amount}`);
    const tools = payTools(pay);
    const prompt: ModelMessage[] = [{ role: 'user', content: 'pay' }];
    const first = await generateText({ model: scripted(payCall(82_000)), tools, messages: prompt });
    const request = first.content.find((p) => p.type === 'tool-approval-request')!;
    await decideApproval(guard, guardApprovalOf(guard, request)!, 'approve', { apiKey: APPROVER });
    // 82,000 approved; the conversation now says 820,000.
    const tampered = JSON.parse(JSON.stringify(first.response.messages).replace('82000', '820000')) as ModelMessage[];
    const model = scripted(done());
    await generateText({ model, tools, messages: answered(prompt, tampered, request.approvalId, true) });
    expect(pay).not.toHaveBeenCalled();
    expect(toolText(model)).toContain('Waiting for approval');
    expect(await admin.approvals.list({ status: 'pending' })).toHaveLength(1);
  });

  it('the framework\'s no runs nothing; a step no ask control holds runs without a prompt, checked once', async () => {
    const pay = vi.fn(async ({ amount }: { amount: number }) => `paid ${amount}`);
    const decisions: string[] = [];
    const tools = guardTools(guard, { pay: tool({ description: 'pay', inputSchema: z.object({ amount: z.number() }), execute: pay }) }, { onDecision: (d) => decisions.push(`${d.stage}:${d.verdict.decision}`) });
    const prompt: ModelMessage[] = [{ role: 'user', content: 'pay' }];
    const first = await generateText({ model: scripted(payCall(50_000)), tools, messages: prompt });
    const request = first.content.find((p) => p.type === 'tool-approval-request')!;
    await generateText({ model: scripted(done()), tools, messages: answered(prompt, first.response.messages, request.approvalId, false) });
    expect(pay).not.toHaveBeenCalled();

    const small = await generateText({ model: scripted(payCall(500, 'c2'), done()), tools, messages: prompt, stopWhen: stepCountIs(3) });
    expect(pay).toHaveBeenCalledTimes(1);
    expect(small.content.some((p) => p.type === 'tool-approval-request')).toBe(false);
    // The small payment was checked once before it ran, not by needsApproval and execute both.
    expect(decisions).toEqual(['pre:ask', 'pre:allow', 'post:allow']);
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

const agentPayCall = (amount: number) => ({ type: 'function_call' as const, callId: 'call-1', name: 'pay', arguments: JSON.stringify({ amount }), status: 'completed' as const });
const agentDone = { type: 'message' as const, role: 'assistant' as const, status: 'completed' as const, content: [{ type: 'output_text' as const, text: 'done' }] };

function payAgent(pay: (input: { amount: number }) => Promise<string>, model: Model): Agent {
  const payTool = agentTool({ name: 'pay', description: 'pay', parameters: z.object({ amount: z.number() }), execute: pay, ...guardrailsFor(guard, { toolName: 'pay' }) });
  return new Agent({ name: 'payer', model, tools: [payTool] });
}

describe('OpenAI Agents interruptions on an ask', () => {
  it('interrupts the run; resumed after state.approve, the tool runs only once guardctl approved', async () => {
    const pay = vi.fn(async ({ amount }: { amount: number }) => `paid ${amount}`);
    const runner = new Runner({ tracingDisabled: true });
    const agent = payAgent(pay, new ScriptedModel([agentPayCall(75_000), agentDone]));
    const first = await runner.run(agent, 'pay');
    expect(first.interruptions).toHaveLength(1);
    expect(pay).not.toHaveBeenCalled();
    const item = first.interruptions[0]!;
    const approval = agentsApprovalOf(guard, item)!;
    expect(approval).toMatchObject({ status: 'pending', tool_name: 'pay' });
    expect((await admin.approvals.get(approval.id)).status).toBe('pending');

    await decideApproval(guard, approval, 'approve', { apiKey: APPROVER });
    first.state.approve(item);
    const resumed = await runner.run(agent, first.state);
    expect(pay).toHaveBeenCalledTimes(1);
    expect(pay.mock.calls[0]![0]).toEqual({ amount: 75_000 });
    expect(resumed.finalOutput).toBe('done');
  });

  it('resumed after state.approve while guardctl\'s approval is pending, the tool does not run', async () => {
    const pay = vi.fn(async ({ amount }: { amount: number }) => `paid ${amount}`);
    const runner = new Runner({ tracingDisabled: true });
    const agent = payAgent(pay, new ScriptedModel([agentPayCall(75_000), agentDone]));
    const first = await runner.run(agent, 'pay');
    const item = first.interruptions[0]!;
    first.state.approve(item);
    const resumed = await runner.run(agent, first.state);
    expect(pay).not.toHaveBeenCalled();
    const output = resumed.newItems.find((i) => i.type === 'tool_call_output_item');
    expect(JSON.stringify(output?.rawItem)).toContain('Waiting for approval');
  });

  it("state.approve(item, { alwaysApprove: true }) lets no other call through: each needs guardctl's approval of its own", async () => {
    const pay = vi.fn(async ({ amount }: { amount: number }) => `paid ${amount}`);
    const runner = new Runner({ tracingDisabled: true });
    const second = { ...agentPayCall(99_000), callId: 'call-2' };
    const agent = payAgent(pay, new ScriptedModel([agentPayCall(75_000), second, agentDone]));
    const first = await runner.run(agent, 'pay');
    const item = first.interruptions[0]!;
    await decideApproval(guard, agentsApprovalOf(guard, item)!, 'approve', { apiKey: APPROVER });
    first.state.approve(item, { alwaysApprove: true });
    const resumed = await runner.run(agent, first.state);
    // The approved 75,000 ran; the 99,000 the SDK no longer asks about was checked and not run.
    expect(pay.mock.calls.map((c) => c[0])).toEqual([{ amount: 75_000 }]);
    expect(resumed.interruptions).toHaveLength(0);
    expect(JSON.stringify(resumed.newItems.map((i) => i.rawItem))).toContain('Waiting for approval');
  });

  it('a step no ask control holds runs without an interruption', async () => {
    const pay = vi.fn(async ({ amount }: { amount: number }) => `paid ${amount}`);
    const result = await new Runner({ tracingDisabled: true }).run(payAgent(pay, new ScriptedModel([agentPayCall(500), agentDone])), 'pay');
    expect(result.interruptions).toHaveLength(0);
    expect(pay).toHaveBeenCalledTimes(1);
  });
});
