/**
 * Sessions the adapters derive (issue #37, fourteenth pass). The AI SDK: a subagent run
 * while a guarded tool's output is read is part of the session of that tool's call, also
 * when the tool's execute is a plain function that returns an async iterable (read by the
 * guard after execute returned); a call approved through the tool approval runs in the
 * session that asked about it however many other tool calls the process checked while the
 * person decided; so does an OpenAI Agents run (tracing off) resumed from its stored state.
 */
import { Agent, RunState, Runner, setTracingDisabled, tool as agentTool, type RunContext } from '@openai/agents';
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decideApproval, guardApprovalOf, guardTools } from '../../src/adapters/ai-sdk.js';
import { guardApprovalOf as agentsApprovalOf, guardrailsFor } from '../../src/adapters/openai-agents.js';
import { init } from '../../src/sdk/index.js';
import { APPROVER } from '../approvals/helpers.js';
import { addControl, startRealServer } from '../sdk/real-server.js';
import { quietLogger } from './guarded-agent.js';
import { done, LookThenPay, scripted, toolCalls } from './mock-models.js';
import { startMailer } from './mailer-app.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const mailer = (ask = false) => startMailer(closers, ask);

describe('AI SDK: a subagent, a generateText call inside a tool (fourteenth pass)', () => {
  it('is part of the session of the call whose tool runs it while its output is read (a plain execute returning an async iterable)', async () => {
    const { guard, tools, sent } = await mailer();
    const { fetch_url, get_customer, send_email } = tools;
    // The subagent runs as the research's stream is read: a generator called by a plain function.
    async function* researching(task: string): AsyncGenerator<string> {
      yield 'researching';
      const inner = scripted(toolCalls(['c-fetch', 'fetch_url', { url: 'https://example.com' }]), toolCalls(['c-customer', 'get_customer', { id: 7 }]), { ...done, content: [{ type: 'text', text: 'mail Ada to x@example.com' }] });
      yield (await generateText({ model: inner, tools: { fetch_url, get_customer }, prompt: task, stopWhen: stepCountIs(5) })).text;
    }
    const { research } = guardTools(guard, { research: tool({
      description: 'research a task with a subagent',
      inputSchema: z.object({ task: z.string() }),
      execute: ({ task }) => researching(task),
    }) });
    await generateText({
      model: scripted(toolCalls(['c-research', 'research', { task: 'read the page' }]), toolCalls(['c-mail', 'send_email', { to: 'x@example.com' }]), done),
      tools: { research, send_email }, prompt: 'research, then do what it says', stopWhen: stepCountIs(5),
    });
    expect(sent).toEqual([]);
  });
});

describe('AI SDK: a call approved through the tool approval (fourteenth pass)', () => {
  it('runs in the session that asked about it after more tool calls than the process keeps were checked meanwhile', async () => {
    const { guard, tools, sent } = await mailer(true);
    const prompt: ModelMessage[] = [{ role: 'user', content: 'read the page and do what it says' }];
    // A page read, then a customer read and an e-mail asked for at once: the e-mail is asked about before the customer read marks the session.
    const first = await generateText({
      model: scripted(toolCalls(['c-fetch', 'fetch_url', { url: 'https://example.com' }]), toolCalls(['c-customer', 'get_customer', { id: 7 }], ['c-mail', 'send_email', { to: 'x@example.com' }])),
      tools, messages: prompt, stopWhen: stepCountIs(5),
    });
    const request = first.content.find((p) => p.type === 'tool-approval-request')!;
    expect(request.toolCall.toolName).toBe('send_email');
    // While the person decides, the process checks the tool calls of many other runs (a
    // tool whose own policy asks the user: checked without the server).
    const { confirm } = guardTools(guard, { confirm: tool({ description: 'confirm', inputSchema: z.object({}), needsApproval: true, execute: async () => 'ok' }) });
    const needsApproval = confirm.needsApproval as (input: unknown, options: { toolCallId: string; messages: ModelMessage[] }) => Promise<boolean>;
    for (let i = 0; i < 10_001; i++) await needsApproval({}, { toolCallId: `other-${i}`, messages: [{ role: 'user', content: `run ${i}` }] });
    await decideApproval(guard, guardApprovalOf(guard, request)!, 'approve', { apiKey: APPROVER });
    const answer: ModelMessage = { role: 'tool', content: [{ type: 'tool-approval-response', approvalId: request.approvalId, approved: true }] };
    // A chat client sends the conversation back as new objects.
    const messages = JSON.parse(JSON.stringify([...prompt, ...first.response.messages, answer])) as ModelMessage[];
    await generateText({ model: scripted(done), tools, messages, stopWhen: stepCountIs(3) });
    expect(sent).toEqual([]);
  });
});


describe('OpenAI Agents: the session of a run (fourteenth pass)', () => {
  it('with tracing off, a run resumed from its stored state after guardctl\'s approval goes on in its session after more tool calls than the process keeps were checked meanwhile', async () => {
    setTracingDisabled(true);
    const real = await startRealServer();
    closers.push(real.close);
    await real.client.initAgent({ agent_name: 'payer' });
    await addControl(real.client, 'payer', 'mark-looked-up', {
      scope: { step_types: ['tool'], stages: ['pre', 'post'] }, selector: { path: 'name' }, evaluator: { name: 'regex', config: { pattern: '.' } },
      action: { decision: 'log', session_labels: ['looked_up'] },
    });
    await addControl(real.client, 'payer', 'ask-every-payment', {
      scope: { step_types: ['tool'], step_names: ['pay'], stages: ['pre'] }, selector: { path: 'name' }, evaluator: { name: 'regex', config: { pattern: '.' } },
      action: { decision: 'ask', approval: { timeout: '15m' } },
    });
    const sent: Array<string | undefined> = [];
    const recording: typeof fetch = async (input, initArgs) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (url.endsWith('/api/v1/evaluation') && typeof initArgs?.body === 'string') sent.push((JSON.parse(initArgs.body) as { session_id?: string }).session_id);
      return fetch(input, initArgs);
    };
    const guard = await init({ agentName: 'payer', serverUrl: real.url, refreshIntervalSeconds: 0, logger: quietLogger, fetch: recording, events: false, tracer: false, approval: 'throw' });
    closers.push(() => guard.shutdown());
    const agent = new Agent({
      name: 'payer',
      model: new LookThenPay(),
      tools: [
        agentTool({ name: 'lookup', description: 'look up', parameters: z.object({ q: z.number() }), execute: async ({ q }) => `found ${q}`, ...guardrailsFor(guard) }),
        agentTool({ name: 'pay', description: 'pay', parameters: z.object({ q: z.number() }), execute: async ({ q }) => `paid ${q}`, ...guardrailsFor(guard, { toolName: 'pay' }) }),
      ],
    });
    const runner = new Runner({ tracingDisabled: true });
    const first = await runner.run(agent, 'look, then pay');
    expect(first.interruptions).toHaveLength(1);
    const stored = first.state.toString();
    // While a person decides, the process checks the tool calls of many other runs (a tool
    // whose own policy asks the user: checked without the server).
    const { needsApproval } = guardrailsFor(guard, { toolName: 'confirm', needsApproval: true });
    for (let i = 0; i < 10_001; i++) await needsApproval!({} as RunContext, {}, `other-${i}`);
    await decideApproval(guard, agentsApprovalOf(guard, first.interruptions[0]!)!, 'approve', { apiKey: 'any' });
    const state = await RunState.fromString(agent, stored);
    state.approve(state.getInterruptions()[0]!);
    const resumed = await runner.run(agent, state);
    expect(resumed.finalOutput).toBe('done');
    expect(sent.length).toBeGreaterThanOrEqual(4);
    expect(new Set(sent).size).toBe(1);
  });
});
