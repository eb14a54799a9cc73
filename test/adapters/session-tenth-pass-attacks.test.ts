/**
 * Sessions the adapters derive (issue #37, tenth pass). The AI SDK: a call is told by its
 * messages, so a message object that many calls share (a constant) must not join them.
 */
import type { ModelMessage } from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { chatBotOn } from './chat-bot.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});
const chatBot = () => chatBotOn(closers);

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
