/**
 * The Vercel AI SDK with guardctl/ai-sdk: generateText runs the tool loop of a scripted
 * MockLanguageModelV3 (from `ai/test`), whose tools are wrapped by guardTools.
 *
 *   npm start                   # terminal 1: the server with controls/
 *   npm run example:ai-sdk      # terminal 2
 */
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { guardTools } from '../../src/adapters/ai-sdk.js';
import { CALLS, deploy, exitOnFailure, printDecision, printModelRead, runSql, startGuard, type ScriptedCall } from '../shared/scenario.js';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** A model that calls the tool once, then answers. */
function scriptedModel(call: ScriptedCall): MockLanguageModelV3 {
  let turn = 0;
  return new MockLanguageModelV3({
    modelId: 'scripted',
    doGenerate: async () =>
      turn++ === 0
        ? {
            content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: call.tool, input: JSON.stringify(call.args) }],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage,
            warnings: [],
          }
        : { content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] },
  });
}

async function main(): Promise<void> {
  const guard = await startGuard();
  const tools = guardTools(
    guard,
    {
      run_sql: tool({ description: 'Run one SQL statement', inputSchema: z.object({ query: z.string() }), execute: runSql }),
      deploy: tool({ description: 'Deploy a service', inputSchema: z.object({ service: z.string(), environment: z.string() }), execute: deploy }),
    },
    { onDecision: printDecision },
  );
  try {
    for (const call of CALLS) {
      const result = await generateText({ model: scriptedModel(call), tools, prompt: call.label, stopWhen: stepCountIs(3) });
      const part = result.steps[0]!.content.find((p) => p.type === 'tool-result' || p.type === 'tool-error');
      if (part?.type === 'tool-result') printModelRead(String(part.output));
      if (part?.type === 'tool-error') printModelRead(part.error instanceof Error ? part.error.message : String(part.error));
    }
  } finally {
    await guard.shutdown();
  }
}

main().catch(exitOnFailure);
