/**
 * Sessions the adapters derive (issue #37, eleventh pass). The AI SDK: a step continues a
 * session only when its messages go on from an earlier step's with that step's answer.
 * The OpenAI Agents SDK with tracing off: a run resumed from its stored state stays in its session.
 */
import { Agent, RunState, Runner, setTracingDisabled, tool as agentTool, Usage, type Model, type ModelResponse } from '@openai/agents';
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardTools } from '../../src/adapters/ai-sdk.js';
import { guardrailsFor } from '../../src/adapters/openai-agents.js';
import { init } from '../../src/sdk/index.js';
import { addControl, startRealServer } from '../sdk/real-server.js';
import { quietLogger } from './guarded-agent.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** A chat-bot agent against a real server, recording the session id of every evaluation. */
async function chatBot() {
  const { guard, sent } = await recordingGuard();
  const tools = guardTools(guard, { lookup: tool({ description: 'look up', inputSchema: z.object({ q: z.number() }), execute: async ({ q }) => `found ${q}` }) });
  /** One generateText call over `messages`: two tool steps, then an answer. */
  const sessionsOf = async (messages: ModelMessage[]) => {
    sent.length = 0;
    let turn = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        turn++;
        if (turn <= 2) return { content: [{ type: 'tool-call', toolCallId: `c${turn}-${crypto.randomUUID()}`, toolName: 'lookup', input: JSON.stringify({ q: turn }) }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] };
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
      },
    });
    const result = await generateText({ model, tools, messages, stopWhen: stepCountIs(4) });
    return { sessions: [...new Set(sent)], result };
  };
  return { sessionsOf };
}

/** A real server marking every tool step, and a guard recording the session id of each evaluation. */
async function recordingGuard() {
  const real = await startRealServer();
  closers.push(real.close);
  await real.client.initAgent({ agent_name: 'chat-bot' });
  await addControl(real.client, 'chat-bot', 'mark-looked-up', {
    scope: { step_types: ['tool'], stages: ['pre', 'post'] },
    selector: { path: 'name' },
    evaluator: { name: 'regex', config: { pattern: '.' } },
    action: { decision: 'log', session_labels: ['looked_up'] },
  });
  const sent: Array<string | undefined> = [];
  const recording: typeof fetch = async (input, initArgs) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (url.endsWith('/api/v1/evaluation') && typeof initArgs?.body === 'string') sent.push((JSON.parse(initArgs.body) as { session_id?: string }).session_id);
    return fetch(input, initArgs);
  };
  const guard = await init({ agentName: 'chat-bot', serverUrl: real.url, refreshIntervalSeconds: 0, logger: quietLogger, fetch: recording, events: false, tracer: false });
  closers.push(() => guard.shutdown());
  return { guard, sent };
}

describe('AI SDK: the session of a generateText call (eleventh pass)', () => {
  it('gives a call that begins with the very messages of another call (constants) and goes on with its own request its own session', async () => {
    const { sessionsOf } = await chatBot();
    const SYSTEM = { role: 'system' as const, content: 'You help with orders.' };
    const TASK = { role: 'user' as const, content: 'Check the open orders.' };
    // A scheduled job runs over the constants alone; a user's call adds its own request.
    const job = await sessionsOf([SYSTEM, TASK]);
    const user = await sessionsOf([SYSTEM, TASK, { role: 'user', content: 'and refund mine' }]);
    expect([job.sessions.length, user.sessions.length]).toEqual([1, 1]);
    expect(user.sessions[0]).not.toBe(job.sessions[0]);
    // The job's conversation going on (its answers, then a new request) stays the job's.
    const next = await sessionsOf([SYSTEM, TASK, ...job.result.response.messages, { role: 'user', content: 'and then?' }]);
    expect(next.sessions).toEqual(job.sessions);
    // So does a conversation that keeps only the text of the answers.
    const text = await sessionsOf([SYSTEM, TASK, { role: 'assistant', content: job.result.text }, { role: 'user', content: 'and then?' }]);
    expect(text.sessions).toEqual(job.sessions);
  });
});

/** A model that asks for lookup, then pay, then answers. */
class LookThenPay implements Model {
  #turn = 0;
  async getResponse(): Promise<ModelResponse> {
    this.#turn++;
    const output: ModelResponse['output'] =
      this.#turn === 1 ? [{ type: 'function_call', callId: 'call-look', name: 'lookup', arguments: '{"q":1}', status: 'completed' }]
      : this.#turn === 2 ? [{ type: 'function_call', callId: 'call-pay', name: 'pay', arguments: '{"q":2}', status: 'completed' }]
      : [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }];
    return { usage: new Usage(), output };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not scripted for streaming');
  }
}

describe('OpenAI Agents: the session of a run (eleventh pass)', () => {
  it.each([false, true])('with tracing off, a run resumed from its stored state after an approval goes on in its session (approve every call: %s)', async (alwaysApprove) => {
    setTracingDisabled(true);
    const { guard, sent } = await recordingGuard();
    const agent = new Agent({
      name: 'payer',
      model: new LookThenPay(),
      tools: [
        agentTool({ name: 'lookup', description: 'look up', parameters: z.object({ q: z.number() }), execute: async ({ q }) => `found ${q}`, ...guardrailsFor(guard) }),
        agentTool({ name: 'pay', description: 'pay', parameters: z.object({ q: z.number() }), execute: async ({ q }) => `paid ${q}`, ...guardrailsFor(guard, { toolName: 'pay', needsApproval: true }) }),
      ],
    });
    const runner = new Runner({ tracingDisabled: true });
    const first = await runner.run(agent, 'look, then pay');
    expect(first.interruptions).toHaveLength(1);
    // The application stores the run while a person decides, and resumes it from the store.
    const state = await RunState.fromString(agent, first.state.toString());
    state.approve(state.getInterruptions()[0]!, { alwaysApprove });
    const resumed = await runner.run(agent, state);
    expect(resumed.finalOutput).toBe('done');
    expect(sent).toHaveLength(4);
    expect(new Set(sent).size).toBe(1);
  });
});
