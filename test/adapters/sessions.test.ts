/**
 * Each adapter sends a session id with its framework's mock model driving it: derived
 * from the framework's run (AI SDK: per generateText call; LangChain: thread_id, else the
 * run the tools were invoked in; OpenAI Agents: the trace's group id, else its trace id),
 * or the one given. The ids are read off the evaluation requests the server received.
 */
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import { RunnableLambda } from '@langchain/core/runnables';
import { tool as lcTool, type StructuredToolInterface } from '@langchain/core/tools';
import { Agent, Runner, setTraceProcessors, setTracingDisabled, tool as oaTool, Usage, type Model, type ModelResponse } from '@openai/agents';
import { generateText, stepCountIs, tool as aiTool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardTools as aiGuardTools } from '../../src/adapters/ai-sdk.js';
import { guardTools as lcGuardTools } from '../../src/adapters/langchain.js';
import { guardrailsFor } from '../../src/adapters/openai-agents.js';
import { init, type GuardAgent } from '../../src/sdk/index.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';
import { quietLogger } from './guarded-agent.js';

let server: RunningServer;
let sent: Array<{ step: string; stage: string; session_id?: string }>;
let guards: GuardAgent[];

beforeEach(async () => {
  server = await startRealServer();
  await server.client.initAgent({ agent_name: 'session-bot' });
  // A server control on every tool step (post) and on lookup (pre), so both reach the server.
  await addControl(server.client, 'session-bot', 'mark-looked-up', {
    scope: { step_types: ['tool'], step_names: ['lookup'], stages: ['pre', 'post'] },
    selector: { path: 'name' },
    evaluator: { name: 'regex', config: { pattern: '.' } },
    action: { decision: 'log', session_labels: ['looked_up'] },
  });
  sent = [];
  guards = [];
});
afterEach(async () => {
  for (const g of guards) await g.shutdown();
  await server.close();
});

/** A guard whose fetch notes each evaluation request's step and session. */
async function guard(sessionId?: string): Promise<GuardAgent> {
  const recording: typeof fetch = async (input, initArgs) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (url.endsWith('/api/v1/evaluation') && typeof initArgs?.body === 'string') {
      const body = JSON.parse(initArgs.body) as { stage: string; step: { name: string }; session_id?: string };
      sent.push({ step: body.step.name, stage: body.stage, ...(body.session_id === undefined ? {} : { session_id: body.session_id }) });
    }
    return fetch(input, initArgs);
  };
  const g = await init({ agentName: 'session-bot', serverUrl: server.url, refreshIntervalSeconds: 0, logger: quietLogger, fetch: recording, ...(sessionId ? { sessionId } : {}) });
  guards.push(g);
  return g;
}

const sessionsSent = () => [...new Set(sent.map((s) => s.session_id))];

describe('AI SDK', () => {
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  const run = (g: GuardAgent, options: Parameters<typeof aiGuardTools>[2] = {}) => {
    let turn = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        turn++;
        if (turn <= 2) {
          return { content: [{ type: 'tool-call', toolCallId: `c${turn}`, toolName: 'lookup', input: JSON.stringify({ q: turn }) }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] };
        }
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
      },
    });
    const tools = aiGuardTools(g, { lookup: aiTool({ description: 'look up', inputSchema: z.object({ q: z.number() }), execute: async ({ q }) => `found ${q}` }) }, options);
    return generateText({ model, tools, prompt: 'look twice', stopWhen: stepCountIs(4) });
  };

  it('gives the steps of one generateText call one session, and the next call another', async () => {
    const g = await guard();
    await run(g);
    expect(sent).toHaveLength(4);
    const first = sessionsSent();
    expect(first).toHaveLength(1);
    expect(first[0]).toMatch(/^ai-sdk:/);
    sent = [];
    await run(g);
    expect(sessionsSent()).toHaveLength(1);
    expect(sessionsSent()[0]).not.toBe(first[0]);
  });

  it('uses the sessionId given to the adapter, or to init', async () => {
    await run(await guard(), { sessionId: 'chat-42' });
    expect(sessionsSent()).toEqual(['chat-42']);
    sent = [];
    await run(await guard('from-init'));
    expect(sessionsSent()).toEqual(['from-init']);
  });
});

describe('LangChain.js', () => {
  const lookup = () => lcTool(async ({ q }: { q: number }) => `found ${q}`, { name: 'lookup', description: 'look up', schema: z.object({ q: z.number() }) }) as StructuredToolInterface;
  /** One agent run: a runnable that invokes the tool twice, as an agent's tool node does. */
  const agentRun = (tool: StructuredToolInterface) =>
    RunnableLambda.from(async (_input: string, config) => {
      await tool.invoke({ id: 'c1', name: 'lookup', args: { q: 1 }, type: 'tool_call' }, config);
      await tool.invoke({ id: 'c2', name: 'lookup', args: { q: 2 }, type: 'tool_call' }, config);
      return 'done';
    });

  it('uses the LangGraph thread_id', async () => {
    const [tool] = lcGuardTools(await guard(), [lookup()]);
    await agentRun(tool!).invoke('go', { configurable: { thread_id: 'thread-7' } });
    expect(sessionsSent()).toEqual(['langchain:thread:thread-7']);
  });

  it('without a thread, gives the tools of one run one session and the next run another (with callbacks: runs have ids)', async () => {
    const [tool] = lcGuardTools(await guard(), [lookup()]);
    // LangChain makes run ids only when a callback handler listens (a tracer, a logger).
    const callbacks = [BaseCallbackHandler.fromMethods({ handleToolStart: () => undefined })];
    await agentRun(tool!).invoke('go', { callbacks });
    const first = sessionsSent();
    expect(first).toHaveLength(1);
    expect(first[0]).toMatch(/^langchain:run:/);
    sent = [];
    await agentRun(tool!).invoke('go', { callbacks });
    expect(sessionsSent()).toHaveLength(1);
    expect(sessionsSent()[0]).not.toBe(first[0]);
  });

  it('uses the sessionId given to the adapter', async () => {
    const [tool] = lcGuardTools(await guard(), [lookup()], { sessionId: () => 'given' });
    await agentRun(tool!).invoke('go', { configurable: { thread_id: 'ignored' } });
    expect(sessionsSent()).toEqual(['given']);
  });
});

describe('OpenAI Agents', () => {
  class Scripted implements Model {
    #turn = 0;
    async getResponse(): Promise<ModelResponse> {
      this.#turn++;
      const output: ModelResponse['output'] =
        this.#turn <= 2
          ? [{ type: 'function_call', callId: `c${this.#turn}`, name: 'lookup', arguments: JSON.stringify({ q: this.#turn }), status: 'completed' }]
          : [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }];
      return { usage: new Usage(), output };
    }
    // eslint-disable-next-line require-yield
    async *getStreamedResponse(): AsyncIterable<never> {
      throw new Error('not scripted for streaming');
    }
  }
  const agentOf = (g: GuardAgent) =>
    new Agent({
      name: 'looker',
      model: new Scripted(),
      tools: [oaTool({ name: 'lookup', description: 'look up', parameters: z.object({ q: z.number() }), execute: async ({ q }) => `found ${q}`, ...guardrailsFor(g) })],
    });

  it('uses the run\'s group id, else its trace id (one per run)', async () => {
    const g = await guard();
    // Tracing on, exported nowhere: the runs get real trace and group ids.
    setTraceProcessors([]);
    setTracingDisabled(false);
    try {
      await new Runner({ groupId: 'conversation-9' }).run(agentOf(g), 'look');
      expect(sessionsSent()).toEqual(['openai-agents:group:conversation-9']);
      sent = [];
      await new Runner().run(agentOf(g), 'look');
      const first = sessionsSent();
      expect(first).toHaveLength(1);
      expect(first[0]).toMatch(/^openai-agents:trace:trace_/);
      sent = [];
      await new Runner().run(agentOf(g), 'look');
      expect(sessionsSent()[0]).not.toBe(first[0]);
    } finally {
      setTracingDisabled(true);
    }
  });

  it('with tracing off, gives each run its own session (never one shared no-op trace)', async () => {
    setTracingDisabled(true);
    const g = await guard();
    await new Runner({ tracingDisabled: true }).run(agentOf(g), 'look');
    const first = sessionsSent();
    expect(first).toHaveLength(1);
    expect(first[0]).toMatch(/^openai-agents:run:/);
    sent = [];
    await new Runner({ tracingDisabled: true }).run(agentOf(g), 'look');
    expect(sessionsSent()).toHaveLength(1);
    expect(sessionsSent()[0]).not.toBe(first[0]);
  });
});

describe('SDK', () => {
  it('sends sessionId from init, per call and per control(), and refuses an invalid one', async () => {
    const g = await guard('default-session');
    await g.check({ type: 'tool', name: 'lookup', input: {} }, 'pre');
    await g.check({ type: 'tool', name: 'lookup', input: {} }, 'pre', { sessionId: 'per-call' });
    const lookup = g.control(async (_q: { q: number }) => 'ok', { stepName: 'lookup', type: 'tool', sessionId: () => 'per-control' });
    await lookup({ q: 1 });
    expect(sent.map((s) => s.session_id)).toEqual(['default-session', 'per-call', 'per-control', 'per-control']);
    await expect(g.check({ type: 'tool', name: 'lookup', input: {} }, 'pre', { sessionId: 'a\u0000b' })).rejects.toThrow(TypeError);
    const info = await server.client.getSession('per-control', 'session-bot');
    expect(info.labels.map((l) => l.label)).toEqual(['looked_up']);
    expect(info.steps).toBe(2);
  });
});
