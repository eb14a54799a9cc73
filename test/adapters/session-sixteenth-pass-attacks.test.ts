/**
 * Sessions and what guards them (issue #37, sixteenth pass), a second reading of the
 * fifteenth pass. The AI SDK: a tool's toModelOutput may hand the model a file as content
 * parts, its bytes base64; the provider hands the model the file's text, which the post
 * check must read too.
 */
import { generateText, generateText as generate, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { guardModel, guardTools } from '../../src/adapters/ai-sdk.js';
import { addControl } from '../sdk/real-server.js';
import { AGENT, startGuarded, type GuardedSetup } from './guarded-agent.js';
import { done, scripted, toolCalls, type GenerateResult, usage } from './mock-models.js';

// Each test a guard server and an agent of its own (guarded-agent.ts).
let setup: GuardedSetup;
beforeEach(async () => {
  setup = await startGuarded();
});
afterEach(async () => {
  await setup.close();
});

type StreamPart = Awaited<ReturnType<MockLanguageModelV3['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

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

describe('AI SDK: guardModel and an answer that carries more than text (sixteenth pass)', () => {
  async function denyKeysInAnswers(): Promise<void> {
    await addControl(setup.server.client, AGENT, 'no-keys-in-answers', {
      scope: { step_types: ['llm'], stages: ['post'] },
      selector: { path: 'output' },
      evaluator: { name: 'regex', config: { pattern: 'AKIA[0-9A-Z]{16}' } },
      action: { decision: 'deny' },
    });
    await setup.guard.refresh();
  }

  async function answered(content: GenerateResult['content']): Promise<string> {
    const model = wrapLanguageModel({ model: scripted({ ...done, content }), middleware: guardModel(setup.guard) });
    return generate({ model, prompt: 'what is in the credentials file?' }).then(
      // A text file as the application reads it: its text.
      (result) => JSON.stringify([...result.content, ...result.files.map((file) => Buffer.from(file.base64, 'base64').toString('utf8'))]),
      (error: unknown) => `refused: ${(error as Error).message}`,
    );
  }

  it('checks a file the model wrote: a key in a generated text file is denied, not handed to the application', async () => {
    await denyKeysInAnswers();
    const result = await answered([{ type: 'text', text: 'here it is' }, { type: 'file', mediaType: 'text/plain', data: Buffer.from(CREDENTIALS).toString('base64') }]);
    expect(result).not.toContain('AKIA');
    expect(result).toMatch(/^refused: /);
  });

  it('checks what a provider-executed tool answered: a key in its result is denied', async () => {
    await denyKeysInAnswers();
    const result = await answered([
      { type: 'tool-call', toolCallId: 'srv-1', toolName: 'code_execution', input: '{"code":"print(open(\'creds\').read())"}', providerExecuted: true },
      { type: 'tool-result', toolCallId: 'srv-1', toolName: 'code_execution', result: { stdout: CREDENTIALS } },
      { type: 'text', text: 'ran it' },
    ]);
    expect(result).not.toContain('AKIA');
    expect(result).toMatch(/^refused: /);
  });

  it('checks a streamed file and a streamed provider tool result: nothing of them reaches the stream', async () => {
    await denyKeysInAnswers();
    const parts: StreamPart[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'file', mediaType: 'text/plain', data: Buffer.from(CREDENTIALS).toString('base64') },
      { type: 'tool-call', toolCallId: 'srv-1', toolName: 'code_execution', input: '{}', providerExecuted: true },
      { type: 'tool-result', toolCallId: 'srv-1', toolName: 'code_execution', result: { stdout: CREDENTIALS } },
      { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
    ];
    for (const shown of [parts.filter((p) => p.type !== 'tool-call' && p.type !== 'tool-result'), parts.filter((p) => p.type !== 'file')]) {
      const inner = new MockLanguageModelV3({
        doStream: async () => ({
          stream: new ReadableStream({
            start(controller) {
              for (const part of shown) controller.enqueue(part);
              controller.close();
            },
          }),
        }),
      });
      const model = wrapLanguageModel({ model: inner, middleware: guardModel(setup.guard) });
      const seen: string[] = [];
      const result = streamText({ model, prompt: 'what is in the credentials file?', onError: ({ error }) => void seen.push(`refused: ${(error as Error).message}`) });
      for await (const part of result.fullStream) {
        seen.push(JSON.stringify(part, (key, value: unknown) => (key === 'base64Data' && typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : value)));
      }
      // The refusal's match is masked (AKIA…DF7Z): the key's middle is nowhere.
      expect(seen.join('\n')).not.toContain('QWERTYUI');
      expect(seen.join('\n')).toContain('refused: ');
    }
  });
});

describe('AI SDK: a streaming tool whose earlier outputs say more than its result (sixteenth pass)', () => {
  it('passes on only the checked result: a key in a preliminary output never reaches the application', async () => {
    const set = {
      read_file: tool({
        inputSchema: z.object({ path: z.string() }),
        // A preview of the file first, then a summary that holds no key.
        async *execute() {
          yield { preview: CREDENTIALS };
          yield { lines: 1 };
        },
      }),
    };
    let turn = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        const parts: StreamPart[] =
          turn++ === 0
            ? [{ type: 'stream-start', warnings: [] }, { type: 'tool-call', toolCallId: 'call-1', toolName: 'read_file', input: '{"path":".aws/credentials"}' },
              { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage }]
            : [{ type: 'stream-start', warnings: [] }, { type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'done' }, { type: 'text-end', id: 't' },
              { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage }];
        return { stream: new ReadableStream({ start(c) { for (const part of parts) c.enqueue(part); c.close(); } }) };
      },
    });
    const result = streamText({ model, tools: guardTools(setup.guard, set), prompt: 'how long is my credentials file?', stopWhen: stepCountIs(3) });
    const results: unknown[] = [];
    for await (const part of result.fullStream) if (part.type === 'tool-result') results.push(part.output);
    expect(JSON.stringify(results)).not.toContain('AKIA');
    // The checked result still arrives, as the preliminary result and the final one.
    expect(results).toEqual([{ lines: 1 }, { lines: 1 }]);
  });
});
