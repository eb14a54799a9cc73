/**
 * guardctl/ai-sdk against the real `ai` package, driven by its own MockLanguageModelV3:
 * generateText runs the tool loop, so what the model reads after a deny or steer is the
 * prompt of its next call.
 */
import { generateText, stepCountIs, streamText, tool, wrapLanguageModel, type ToolSet } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { guardModel, guardTools, type GuardDecision } from '../../src/adapters/ai-sdk.js';
import { ControlSteerError, ControlViolationError } from '../../src/sdk/index.js';
import { startGuarded, type GuardedSetup } from './guarded-agent.js';

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

function toolCall(toolName: string, input: object, id = 'call-1'): GenerateResult {
  return {
    content: [{ type: 'tool-call', toolCallId: id, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

function answer(text: string): GenerateResult {
  return { content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
}

/** A model that answers with each scripted response in turn. */
function scripted(...responses: GenerateResult[]): MockLanguageModelV3 {
  let turn = 0;
  return new MockLanguageModelV3({
    modelId: 'scripted-model',
    doGenerate: async () => {
      const next = responses[turn++];
      if (!next) throw new Error('the script has no more turns');
      return next;
    },
  });
}

/** The text the model was given as a tool's result on its last call. */
function lastToolResultText(model: MockLanguageModelV3): string {
  const prompt = model.doGenerateCalls.at(-1)!.prompt;
  const toolMessage = prompt.findLast((m) => m.role === 'tool');
  return JSON.stringify(toolMessage?.content ?? null);
}

let setup: GuardedSetup;
beforeEach(async () => {
  setup = await startGuarded();
});
afterEach(async () => {
  await setup.close();
});

function tools() {
  const runSql = vi.fn(async ({ query }: { query: string }) => (query.includes('keys') ? 'AKIAQWERTYUIOPASDF7Z' : `3 rows for ${query}`));
  const deploy = vi.fn(async ({ environment }: { environment: string; dry_run?: boolean }) => `deployed to ${environment}`);
  const set = {
    run_sql: tool({ description: 'run SQL', inputSchema: z.object({ query: z.string() }), execute: runSql }),
    deploy: tool({ description: 'deploy', inputSchema: z.object({ environment: z.string(), dry_run: z.boolean().optional() }), execute: deploy }),
  } satisfies ToolSet;
  return { set, runSql, deploy };
}

describe('guardTools', () => {
  it('allows a harmless call: the tool runs with the input and options the AI SDK passes', async () => {
    const { set, runSql } = tools();
    const model = scripted(toolCall('run_sql', { query: 'select 1' }), answer('done'));
    const result = await generateText({ model, tools: guardTools(setup.guard, set), prompt: 'count', stopWhen: stepCountIs(3) });
    expect(runSql).toHaveBeenCalledTimes(1);
    expect(runSql.mock.calls[0]![0]).toEqual({ query: 'select 1' });
    expect((runSql.mock.calls[0] as unknown[])[1]).toMatchObject({ toolCallId: 'call-1' });
    expect(result.text).toBe('done');
    expect(lastToolResultText(model)).toContain('3 rows for select 1');
  });

  it('denies DROP TABLE before the tool runs: the model reads the tool error, the application sees it in the steps', async () => {
    const { set, runSql } = tools();
    const decisions: GuardDecision[] = [];
    const model = scripted(toolCall('run_sql', { query: 'DROP TABLE orders' }), answer('I may not drop tables.'));
    const result = await generateText({
      model,
      tools: guardTools(setup.guard, set, { onDecision: (d) => decisions.push(d) }),
      prompt: 'clean up',
      stopWhen: stepCountIs(3),
    });
    expect(runSql).not.toHaveBeenCalled();
    expect(lastToolResultText(model)).toContain('Blocked by control \\"block-drop\\"');
    const errors = result.steps.flatMap((s) => s.content).filter((p) => p.type === 'tool-error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBeInstanceOf(ControlViolationError);
    expect(decisions.map((d) => [d.step.name, d.stage, d.verdict.decision])).toEqual([['run_sql', 'pre', 'deny']]);
  });

  it('steers: the model reads the steering message and the required actions, on every retry that still matches', async () => {
    const { set, deploy } = tools();
    const model = scripted(
      toolCall('deploy', { environment: 'production' }),
      toolCall('deploy', { environment: 'production', dry_run: true }, 'call-2'),
      answer('dry run done'),
    );
    // The steer control matches environment=production: a dry run is steered too, so the script ends with the error.
    const result = await generateText({ model, tools: guardTools(setup.guard, set), prompt: 'ship it', stopWhen: stepCountIs(4) });
    const text = lastToolResultText(model);
    expect(text).toContain('Production deploys need a dry run first.');
    expect(text).toContain('Required actions:');
    expect(text).toContain('call deploy with dry_run=true');
    expect(deploy).not.toHaveBeenCalled();
    const errors = result.steps.flatMap((s) => s.content).filter((p) => p.type === 'tool-error');
    expect(errors.map((e) => e.error)).toEqual([expect.any(ControlSteerError), expect.any(ControlSteerError)]);
  });

  it('withholds an output that a post control denies: the tool ran, the model never sees the key', async () => {
    const { set, runSql } = tools();
    const model = scripted(toolCall('run_sql', { query: 'select keys' }), answer('withheld'));
    await generateText({ model, tools: guardTools(setup.guard, set), prompt: 'keys?', stopWhen: stepCountIs(3) });
    expect(runSql).toHaveBeenCalledTimes(1);
    const text = lastToolResultText(model);
    expect(text).toContain('its result is withheld');
    expect(text).not.toContain('AKIA');
  });

  it('holds back a streaming tool until its last output passes the post check', async () => {
    const set = {
      run_sql: tool({
        inputSchema: z.object({ query: z.string() }),
        async *execute() {
          yield 'working';
          yield 'AKIAQWERTYUIOPASDF7Z';
        },
      }),
    };
    const model = scripted(toolCall('run_sql', { query: 'select keys' }), answer('ok'));
    const result = await generateText({ model, tools: guardTools(setup.guard, set), prompt: 'keys?', stopWhen: stepCountIs(3) });
    const parts = result.steps.flatMap((s) => s.content);
    // No result, preliminary or final, reached the steps; the model read only the refusal.
    expect(parts.filter((p) => p.type === 'tool-result')).toEqual([]);
    expect(parts.filter((p) => p.type === 'tool-error')).toHaveLength(1);
    expect(lastToolResultText(model)).toContain('its result is withheld');
    expect(lastToolResultText(model)).not.toContain('AKIA');
  });

  it('leaves tools without execute as they are', () => {
    const clientSide = tool({ inputSchema: z.object({ x: z.string() }) });
    const guarded = guardTools(setup.guard, { pick: clientSide });
    expect(guarded.pick).toBe(clientSide);
  });

  it('fails closed when the guard server is down: the tool does not run', async () => {
    const { set, deploy } = tools();
    await setup.server.close();
    const model = scripted(toolCall('deploy', { environment: 'staging' }), answer('could not'));
    await generateText({ model, tools: guardTools(setup.guard, set), prompt: 'ship', stopWhen: stepCountIs(3) });
    expect(deploy).not.toHaveBeenCalled();
    expect(lastToolResultText(model)).toContain('could not check this call');
  });
});

describe('guardModel', () => {
  it('checks model calls pre: a prompt with an SSN is steered and the model is never called', async () => {
    const inner = scripted(answer('hello'));
    const model = wrapLanguageModel({ model: inner, middleware: guardModel(setup.guard) });
    const error = await generateText({ model, prompt: 'my ssn is 123-45-6789' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ControlSteerError);
    expect((error as Error).message).toContain('Remove the social security number');
    expect(inner.doGenerateCalls).toHaveLength(0);
    await expect(generateText({ model, prompt: 'hi' })).resolves.toMatchObject({ text: 'hello' });
  });

  it('checks the answer post, also when it is streamed (nothing is shown before the check)', async () => {
    await setup.server.client.createControl({
      name: 'no-internal-hosts',
      data: {
        scope: { step_types: ['llm'], stages: ['post'] },
        selector: { path: 'output.text' },
        evaluator: { name: 'regex', config: { pattern: 'internal\\.example' } },
        action: { decision: 'deny' },
      },
    }).then(({ control_id }) => setup.server.client.link('framework-bot', control_id));
    await setup.guard.refresh();
    const inner = new MockLanguageModelV3({
      modelId: 'streamer',
      doStream: async () => ({
        stream: new ReadableStream({
          start(c) {
            c.enqueue({ type: 'stream-start', warnings: [] });
            c.enqueue({ type: 'text-start', id: 't' });
            c.enqueue({ type: 'text-delta', id: 't', delta: 'see https://internal.' });
            c.enqueue({ type: 'text-delta', id: 't', delta: 'example/admin' });
            c.enqueue({ type: 'text-end', id: 't' });
            c.enqueue({ type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage });
            c.close();
          },
        }),
      }),
    });
    const decisions: GuardDecision[] = [];
    const model = wrapLanguageModel({ model: inner, middleware: guardModel(setup.guard, { onDecision: (d) => decisions.push(d) }) });
    const errors: unknown[] = [];
    const result = streamText({ model, prompt: 'where is the admin page?', onError: ({ error }) => void errors.push(error) });
    let shown = '';
    for await (const delta of result.textStream) shown += delta;
    expect(shown).toBe('');
    expect(errors[0]).toBeInstanceOf(ControlViolationError);
    expect(decisions.map((d) => [d.step.type, d.step.name, d.stage, d.verdict.decision])).toEqual([
      ['llm', 'streamer', 'pre', 'allow'],
      ['llm', 'streamer', 'post', 'deny'],
    ]);
  });
});

describe('guardTools and a tool with no parameters (issue #35 item 2)', () => {
  for (const sent of ['', '{}']) {
    it(`runs it when the model sends ${JSON.stringify(sent)} as its input, checked pre and post`, async () => {
      const listOrders = vi.fn(async () => '3 orders');
      const set = { list_orders: tool({ description: 'list orders', inputSchema: z.object({}), execute: listOrders }) } satisfies ToolSet;
      const decisions: GuardDecision[] = [];
      const model = scripted(
        { content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'list_orders', input: sent }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] },
        answer('done'),
      );
      const result = await generateText({ model, tools: guardTools(setup.guard, set, { onDecision: (d) => decisions.push(d) }), prompt: 'list', stopWhen: stepCountIs(3) });
      expect(listOrders).toHaveBeenCalledTimes(1);
      expect(result.text).toBe('done');
      expect(decisions.map((d) => [d.stage, d.verdict.decision, d.verdict.unavailable])).toEqual([['pre', 'allow', false], ['post', 'allow', false]]);
    });
  }

  it('withholds a secret a zero-parameter tool returns', async () => {
    const set = { read_keys: tool({ description: 'keys', inputSchema: z.object({}), execute: async () => 'AKIAQWERTYUIOPASDF7Z' }) } satisfies ToolSet;
    const model = scripted(
      { content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'read_keys', input: '' }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] },
      answer('done'),
    );
    const result = await generateText({ model, tools: guardTools(setup.guard, set), prompt: 'keys', stopWhen: stepCountIs(3) });
    const errors = result.steps.flatMap((s) => s.content).filter((p) => p.type === 'tool-error');
    expect(errors).toHaveLength(1);
    expect((errors[0] as { error: unknown }).error).toBeInstanceOf(ControlViolationError);
    expect(lastToolResultText(model)).not.toContain('AKIA');
  });
});
