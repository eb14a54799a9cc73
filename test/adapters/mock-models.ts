/**
 * Scripted models for the adapter tests, built on each framework's own mock: the AI SDK's
 * MockLanguageModelV3 answering a script turn by turn, and an OpenAI Agents Model that asks
 * for `lookup`, then `pay`, then answers.
 */
import { Usage, type Model, type ModelResponse } from '@openai/agents';
import { MockLanguageModelV3 } from 'ai/test';

export type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

export const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** A turn asking for tool calls: [toolCallId, toolName, input] each. */
export const toolCalls = (...calls: Array<[string, string, unknown]>): GenerateResult => ({
  content: calls.map(([toolCallId, toolName, input]) => ({ type: 'tool-call' as const, toolCallId, toolName, input: JSON.stringify(input) })),
  finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [],
});

/** A turn that answers "done". */
export const done: GenerateResult = { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };

/** A model that answers with each scripted turn in order. */
export function scripted(...responses: GenerateResult[]): MockLanguageModelV3 {
  let turn = 0;
  return new MockLanguageModelV3({ modelId: 'scripted', doGenerate: async () => responses[turn++]! });
}

/** An OpenAI Agents model that asks for lookup, then pay, then answers. */
export class LookThenPay implements Model {
  #turn = 0;
  async getResponse(): Promise<ModelResponse> {
    this.#turn++;
    const output: ModelResponse['output'] =
      this.#turn === 1 ? [{ type: 'function_call', callId: 'call-look', name: 'lookup', arguments: '{"q":1}', status: 'completed' }]
      : this.#turn === 2 ? [{ type: 'function_call', callId: 'call-pay', name: 'pay', arguments: '{"q":2}', status: 'completed' }]
      : [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'done' }] }];
    return { usage: new Usage(), output };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not scripted for streaming');
  }
}
