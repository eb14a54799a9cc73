/**
 * Sessions and what guards them (issue #37, sixteenth pass), a second reading of the
 * fifteenth pass. The AI SDK: a tool's toModelOutput may hand the model a file as content
 * parts, its bytes base64; the provider hands the model the file's text, which the post
 * check must read too.
 */
import { generateText, stepCountIs, tool } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardTools } from '../../src/adapters/ai-sdk.js';
import { startGuarded, type GuardedSetup } from './guarded-agent.js';
import { done, scripted, toolCalls } from './mock-models.js';

// Each test a guard server and an agent of its own (guarded-agent.ts).
let setup: GuardedSetup;
beforeEach(async () => {
  setup = await startGuarded();
});
afterEach(async () => {
  await setup.close();
});

const CREDENTIALS = 'aws_access_key_id = AKIAQWERTYUIOPASDF7Z';

/** What the model was handed as the tool's result, the base64 of a text file read as its text. */
async function handedFor(toModelOutput: (options: { output: { content: string } }) => unknown): Promise<string> {
  const set = {
    read_file: tool({
      inputSchema: z.object({ path: z.string() }),
      execute: async () => ({ encoding: 'base64', content: Buffer.from(CREDENTIALS).toString('base64') }),
      toModelOutput: toModelOutput as never,
    }),
  };
  const model = scripted(toolCalls(['call-1', 'read_file', { path: '.aws/credentials' }]), done);
  await generateText({ model, tools: guardTools(setup.guard, set), prompt: 'read my credentials', stopWhen: stepCountIs(3) });
  const parts = model.doGenerateCalls.at(-1)!.prompt.findLast((m) => m.role === 'tool')?.content ?? [];
  // A provider decodes a text file part for the model (a document); so does this reading.
  return JSON.stringify(parts, (key, value: unknown) =>
    key === 'data' && typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : value);
}

describe('AI SDK: a toModelOutput that hands the model a file as content parts (sixteenth pass)', () => {
  it('withholds a text file part whose decoded bytes the post check denies: the model never sees the key', async () => {
    const handed = await handedFor(({ output }) => ({
      type: 'content' as const,
      value: [{ type: 'file-data' as const, data: output.content, mediaType: 'text/plain', filename: 'credentials' }],
    }));
    expect(handed).not.toContain('AKIA');
    expect(handed).toContain('withheld');
  });

  it('withholds a media part of text too', async () => {
    const handed = await handedFor(({ output }) => ({
      type: 'content' as const,
      value: [{ type: 'text' as const, text: 'the file:' }, { type: 'media' as const, data: output.content, mediaType: 'text/plain' }],
    }));
    expect(handed).not.toContain('AKIA');
    expect(handed).toContain('withheld');
  });
});
