/**
 * Sessions the adapters derive (issue #37, eleventh pass). The AI SDK: a step continues a
 * session only when its messages go on from an earlier step's with that step's answer.
 * The OpenAI Agents SDK with tracing off: a run resumed from its stored state stays in its session.
 */
import { Agent, RunState, Runner, setTracingDisabled, tool as agentTool } from '@openai/agents';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardrailsFor } from '../../src/adapters/openai-agents.js';
import { chatBotOn, recordingGuardOn } from './chat-bot.js';
import { LookThenPay } from './mock-models.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const chatBot = () => chatBotOn(closers);

/** A real server marking every tool step, and a guard recording the session id of each evaluation. */
const recordingGuard = () => recordingGuardOn(closers);

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
