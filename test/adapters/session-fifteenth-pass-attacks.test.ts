/**
 * Guarded tools of the AI SDK (issue #37, fifteenth pass), a second reading of the
 * fourteenth pass's reading of a tool's stream within its call. A streaming tool's outputs
 * are what the post check reads and what the model is handed: an async generator that
 * delegates to another async iterable (`yield*`) passes that iterable's values on as they
 * are, a promise too, which the post check must see resolved, as the AI SDK does.
 */
import { generateText, stepCountIs, tool } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardTools } from '../../src/adapters/ai-sdk.js';
import { startGuarded, type GuardedSetup } from './guarded-agent.js';
import { scripted, toolCalls, done } from './mock-models.js';

let setup: GuardedSetup;
beforeEach(async () => {
  setup = await startGuarded();
});
afterEach(async () => {
  await setup.close();
});

/** An async iterable whose values are promises (a library's stream of pending reads). */
function pendingReads(...values: string[]): AsyncIterable<Promise<string>> {
  return {
    [Symbol.asyncIterator]() {
      let i = 0;
      return { next: async () => (i < values.length ? { value: Promise.resolve(values[i++]!), done: false } : { value: undefined, done: true }) };
    },
  };
}

describe('AI SDK: a streaming tool whose stream yields promises (fifteenth pass)', () => {
  it('withholds an output the post check denies when it arrives as a promise: the model never sees the key', async () => {
    const set = {
      run_sql: tool({
        inputSchema: z.object({ query: z.string() }),
        async *execute() {
          // yield* hands on the inner iterator's values without awaiting them.
          yield* pendingReads('working', 'AKIAQWERTYUIOPASDF7Z');
        },
      }),
    };
    const model = scripted(toolCalls(['call-1', 'run_sql', { query: 'select keys' }]), done);
    const result = await generateText({ model, tools: guardTools(setup.guard, set), prompt: 'keys?', stopWhen: stepCountIs(3) });
    const parts = result.steps.flatMap((s) => s.content);
    expect(parts.filter((p) => p.type === 'tool-result')).toEqual([]);
    const handed = JSON.stringify(model.doGenerateCalls.at(-1)!.prompt.findLast((m) => m.role === 'tool')?.content ?? null);
    expect(handed).toContain('its result is withheld');
    expect(handed).not.toContain('AKIA');
  });
});
