/**
 * Sessions the adapters derive (issue #37, tenth pass). The AI SDK: a call is told by its
 * messages, so a message object that many calls share (a constant) must not join them.
 */
import { generateText, stepCountIs, tool, type ModelMessage } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardTools } from '../../src/adapters/ai-sdk.js';
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
  const real = await startRealServer();
  closers.push(real.close);
  await real.client.initAgent({ agent_name: 'chat-bot' });
  await addControl(real.client, 'chat-bot', 'mark-looked-up', {
    scope: { step_types: ['tool'], step_names: ['lookup'], stages: ['pre', 'post'] },
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
  // A lookup of q 0 first lets other calls run (other users' calls, between this call's steps).
  let meanwhile: () => Promise<void> = async () => undefined;
  const lookup = async ({ q }: { q: number }) => {
    if (q === 0) await meanwhile();
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
    meanwhile = async () => {
      meanwhile = async () => undefined;
      const own = [...sent];
      await others();
      sent.length = 0;
      sent.push(...own);
    };
    sent.length = 0;
    await call(messages, 0);
    return [...new Set(sent)];
  };
  return { sessionsOf, callPausing };
}

describe('AI SDK: the session of a generateText call', () => {
  it('gives two calls that end with the same message object (a reminder held in a constant) two sessions', async () => {
    const { sessionsOf } = await chatBot();
    const REMINDER = { role: 'user' as const, content: 'Answer briefly.' };
    const first = await sessionsOf([{ role: 'user', content: 'first customer' }, REMINDER]);
    const second = await sessionsOf([{ role: 'user', content: 'second customer' }, REMINDER]);
    expect([first.sessions.length, second.sessions.length]).toEqual([1, 1]);
    expect(second.sessions[0]).not.toBe(first.sessions[0]);
  });

  it('gives two calls over the very same messages (a scheduled job\'s prompt held in a constant) two sessions', async () => {
    const { sessionsOf } = await chatBot();
    const JOB: ModelMessage[] = [{ role: 'system', content: 'You deploy.' }, { role: 'user', content: 'Ship the release.' }];
    const first = await sessionsOf(JOB);
    const second = await sessionsOf(JOB);
    expect([first.sessions.length, second.sessions.length]).toEqual([1, 1]);
    expect(second.sessions[0]).not.toBe(first.sessions[0]);
  });

  it('keeps one call in one session while many other calls end with the same message object between its steps', async () => {
    const { sessionsOf, callPausing } = await chatBot();
    const REMINDER = { role: 'user' as const, content: 'Answer briefly.' };
    const sessions = await callPausing([{ role: 'user', content: 'first customer' }, REMINDER], async () => {
      for (let i = 0; i < 40; i++) await sessionsOf([{ role: 'user', content: `customer ${i}` }, REMINDER]);
    });
    expect(sessions).toHaveLength(1);
  });

  it('keeps two runs of a scheduled job (the very same messages) apart while both are under way', async () => {
    const { sessionsOf, callPausing } = await chatBot();
    const JOB: ModelMessage[] = [{ role: 'system', content: 'You deploy.' }, { role: 'user', content: 'Ship the release.' }];
    let other: string[] = [];
    const sessions = await callPausing(JOB, async () => {
      other = (await sessionsOf(JOB)).sessions as string[];
    });
    expect([sessions.length, other.length]).toEqual([1, 1]);
    expect(other[0]).not.toBe(sessions[0]);
  });

  it('a call that goes on with the messages of an earlier call stays in its session', async () => {
    const { sessionsOf } = await chatBot();
    const REMINDER = { role: 'user' as const, content: 'Answer briefly.' };
    const prompt: ModelMessage[] = [{ role: 'user', content: 'first customer' }, REMINDER];
    const first = await sessionsOf(prompt);
    await sessionsOf([{ role: 'user', content: 'second customer' }, REMINDER]);
    const next = await sessionsOf([...prompt, ...first.result.response.messages, { role: 'user', content: 'and then?' }]);
    expect(next.sessions).toEqual(first.sessions);
    // The answers as a client sends them back (new objects): the prompt still tells the call.
    const copied = JSON.parse(JSON.stringify(first.result.response.messages)) as ModelMessage[];
    const again = await sessionsOf([...prompt, ...copied, { role: 'user', content: 'and then?' }]);
    expect(again.sessions).toEqual(first.sessions);
  });
});
