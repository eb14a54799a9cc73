/** The AI SDK chat bot the session attack tests drive (issue #37). */
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { guardTools } from '../../src/adapters/ai-sdk.js';
import { init } from '../../src/sdk/index.js';
import { addControl, startRealServer } from '../sdk/real-server.js';
import { quietLogger } from './guarded-agent.js';

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/**
 * A chat-bot agent against a real server (an AI SDK call with two tool steps, driven by the
 * SDK's mock model), recording the session id of every evaluation; what it starts is closed
 * by `closers`.
 */
export async function chatBotOn(closers: Array<() => Promise<void>>) {
  const { guard, sent } = await recordingGuardOn(closers, ['lookup']);
  // A lookup of q 0 waits at the gate: other users' calls run meanwhile, between this
  // call's steps (beside it, not inside its tool, where they would be its subagents).
  let paused: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  const lookup = async ({ q }: { q: number }) => {
    if (q === 0) {
      paused();
      await gate;
    }
    return `found ${q}`;
  };
  const tools = guardTools(guard, { lookup: tool({ description: 'look up', inputSchema: z.object({ q: z.number() }), execute: lookup }) });
  /** One generateText call over `messages`: two tool steps, then an answer. */
  const call = (messages: ModelMessage[], first = 1) => {
    let turn = 0;
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        turn++;
        if (turn <= 2) return { content: [{ type: 'tool-call', toolCallId: `c${turn}-${crypto.randomUUID()}`, toolName: 'lookup', input: JSON.stringify({ q: turn === 1 ? first : turn }) }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] };
        return { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
      },
    });
    return generateText({ model, tools, messages, stopWhen: stepCountIs(4) });
  };
  const sessionsOf = async (messages: ModelMessage[]) => {
    sent.length = 0;
    const result = await call(messages);
    return { sessions: [...new Set(sent)], result };
  };
  /** A call whose first step lets `others` run before it answers. */
  const callPausing = async (messages: ModelMessage[], others: () => Promise<void>) => {
    let open: () => void = () => undefined;
    gate = new Promise((resolve) => (open = resolve));
    const reached = new Promise<void>((resolve) => (paused = resolve));
    sent.length = 0;
    const running = call(messages, 0);
    await Promise.race([reached, running]);
    const own = [...sent];
    try {
      await others();
    } finally {
      open();
    }
    sent.length = 0;
    sent.push(...own);
    await running;
    return [...new Set(sent)];
  };
  return { sessionsOf, callPausing };
}

/**
 * A real server whose agent `chat-bot` marks each tool step (those named `stepNames`, or
 * all) with `looked_up`, and a guard recording the session id of each evaluation it sends.
 */
export async function recordingGuardOn(closers: Array<() => Promise<void>>, stepNames?: string[]) {
  const real = await startRealServer();
  closers.push(real.close);
  await real.client.initAgent({ agent_name: 'chat-bot' });
  await addControl(real.client, 'chat-bot', 'mark-looked-up', {
    scope: { step_types: ['tool'], ...(stepNames && { step_names: stepNames }), stages: ['pre', 'post'] },
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
