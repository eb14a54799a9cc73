/**
 * Sessions and what guards them (issue #37, fifteenth pass), a second reading of the
 * fourteenth pass. The AI SDK: a streaming tool's outputs are what the post check reads
 * and what the model is handed: an async generator that delegates to another async
 * iterable (`yield*`) passes that iterable's values on as they are, a promise too, which
 * the post check must see resolved, as the AI SDK does; a tool's toModelOutput hands the
 * model what it makes of the output, which the post check must read too; a model's
 * reasoning is its output as much as its text. validate: sessions are per agent,
 * so a label only controls linked to other agents add is never on the sessions of an
 * agent whose control requires it.
 */
import { generateText, stepCountIs, tool } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { generateText as generate, streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { guardModel, guardTools } from '../../src/adapters/ai-sdk.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments } from '../../src/gitops/load.js';
import { addControl } from '../sdk/real-server.js';
import { AGENT, startGuarded, type GuardedSetup } from './guarded-agent.js';
import { done, scripted, toolCalls, usage } from './mock-models.js';


/** An async iterable whose values are promises (a library's stream of pending reads). */
function pendingReads(...values: string[]): AsyncIterable<Promise<string>> {
  return {
    [Symbol.asyncIterator]() {
      let i = 0;
      return { next: async () => (i < values.length ? { value: Promise.resolve(values[i++]!), done: false } : { value: undefined, done: true }) };
    },
  };
}

// Each test a guard server and an agent of its own (guarded-agent.ts).
let setup: GuardedSetup;
beforeEach(async () => {
  setup = await startGuarded();
});
afterEach(async () => {
  await setup.close();
});

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

describe('AI SDK: a tool whose toModelOutput hands the model more than its output says (fifteenth pass)', () => {
  it('withholds what toModelOutput makes of the output when the post check denies it: the model never sees the key', async () => {
    const set = {
      read_file: tool({
        inputSchema: z.object({ path: z.string() }),
        // The file as base64, which no output control reads as the key it holds.
        execute: async () => ({ encoding: 'base64', content: Buffer.from('aws_access_key_id = AKIAQWERTYUIOPASDF7Z').toString('base64') }),
        toModelOutput: ({ output }) => ({ type: 'text' as const, value: Buffer.from(output.content, 'base64').toString('utf8') }),
      }),
    };
    const model = scripted(toolCalls(['call-1', 'read_file', { path: '.aws/credentials' }]), done);
    await generateText({ model, tools: guardTools(setup.guard, set), prompt: 'read my credentials', stopWhen: stepCountIs(3) });
    const handed = JSON.stringify(model.doGenerateCalls.at(-1)!.prompt.findLast((m) => m.role === 'tool')?.content ?? null);
    expect(handed).not.toContain('AKIA');
    expect(handed).toContain('withheld');
  });
});

describe('AI SDK: guardModel and a model that reasons before it answers (fifteenth pass)', () => {
  it('checks the reasoning post with the text: a key the model wrote in its reasoning is denied, not handed to the application', async () => {
    await addControl(setup.server.client, AGENT, 'no-keys-in-answers', {
      scope: { step_types: ['llm'], stages: ['post'] },
      selector: { path: 'output' },
      evaluator: { name: 'regex', config: { pattern: 'AKIA[0-9A-Z]{16}' } },
      action: { decision: 'deny' },
    });
    await setup.guard.refresh();
    const inner = scripted({ ...done, content: [{ type: 'reasoning', text: 'the key is AKIAQWERTYUIOPASDF7Z, which I should not repeat' }, { type: 'text', text: 'done' }] });
    const model = wrapLanguageModel({ model: inner, middleware: guardModel(setup.guard) });
    const answered = await generate({ model, prompt: 'what is in the credentials file?' }).then(
      (result) => JSON.stringify(result.content),
      (error: unknown) => `refused: ${(error as Error).message}`,
    );
    expect(answered).not.toContain('AKIA');
    expect(answered).toMatch(/^refused: /);
  });

  it('checks streamed reasoning too: nothing of it reaches the stream', async () => {
    await addControl(setup.server.client, AGENT, 'no-keys-in-answers', {
      scope: { step_types: ['llm'], stages: ['post'] },
      selector: { path: 'output' },
      evaluator: { name: 'regex', config: { pattern: 'AKIA[0-9A-Z]{16}' } },
      action: { decision: 'deny' },
    });
    await setup.guard.refresh();
    const inner = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream({
          start(c) {
            c.enqueue({ type: 'stream-start', warnings: [] });
            c.enqueue({ type: 'reasoning-start', id: 'r' });
            c.enqueue({ type: 'reasoning-delta', id: 'r', delta: 'the key is AKIAQWERTYUI' });
            c.enqueue({ type: 'reasoning-delta', id: 'r', delta: 'OPASDF7Z' });
            c.enqueue({ type: 'reasoning-end', id: 'r' });
            c.enqueue({ type: 'text-start', id: 't' });
            c.enqueue({ type: 'text-delta', id: 't', delta: 'done' });
            c.enqueue({ type: 'text-end', id: 't' });
            c.enqueue({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage });
            c.close();
          },
        }),
      }),
    });
    const model = wrapLanguageModel({ model: inner, middleware: guardModel(setup.guard) });
    const result = streamText({ model, prompt: 'what is in the credentials file?', onError: () => undefined });
    const parts: unknown[] = [];
    for await (const part of result.fullStream) parts.push(part);
    // Only the refusal, its match masked: no reasoning part, no key.
    expect(parts.map((p) => (p as { type: string }).type)).toEqual(['start', 'error']);
    expect(JSON.stringify(parts)).not.toContain('QWERTYUI');
  });
});

describe('validate: a required label only other agents\' controls add (fifteenth pass)', () => {
  const marker = `kind: Control
name: mark-untrusted
scope: { step_names: [fetch_url], stages: [post] }
selector: { path: name }
evaluator: { name: regex, config: { pattern: . } }
action: { decision: log, session_labels: [untrusted_content] }
`;
  const blocker = `kind: Control
name: block-exfiltration
scope:
  step_names: [send_email]
  session_labels: [untrusted_content]
selector: { path: name }
evaluator: { name: regex, config: { pattern: . } }
action: { decision: deny }
`;
  const agents = (mailer: string, researcher: string) => `kind: Agent
agent_name: mailer
controls: [${mailer}]
---
kind: Agent
agent_name: researcher
controls: [${researcher}]
`;
  const load = (agentsText: string) =>
    loadDocuments(
      [{ path: 'mark.yaml', text: marker }, { path: 'block.yaml', text: blocker }, { path: 'agents.yaml', text: agentsText }],
      { validateControl: controlValidator(createDefaultRegistry()) },
    );

  it('warns at the agent\'s link when no control linked to that agent adds the label: the deny never applies to it', () => {
    const result = load(agents('block-exfiltration', 'mark-untrusted'));
    expect(result.diagnostics.filter((d) => d.code === 'session_label_never_marked')).toEqual([
      expect.objectContaining({ severity: 'warning', file: 'agents.yaml', line: 3, message: expect.stringContaining('agent "mailer"') }),
    ]);
  });

  it('says nothing when a control linked to the agent adds it', () => {
    const result = load(agents('mark-untrusted, block-exfiltration', 'mark-untrusted'));
    expect(result.diagnostics.filter((d) => d.code === 'session_label_never_marked')).toEqual([]);
  });
});
