/**
 * LangChain.js with guardctl/langchain: a FakeStreamingChatModel (from
 * `@langchain/core/utils/testing`) asks for each tool call, and the guarded tool answers
 * it with a ToolMessage, of status `error` when the guard says no.
 *
 *   npm start                     # terminal 1: the server with controls/
 *   npm run example:langchain     # terminal 2
 */
import { AIMessageChunk, HumanMessage, type ToolMessage } from '@langchain/core/messages';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { z } from 'zod';
import { guardTools } from '../../src/adapters/langchain.js';
import { CALLS, deploy, exitOnFailure, printDecision, printModelRead, runSql, startGuard } from '../shared/scenario.js';

async function main(): Promise<void> {
  const guard = await startGuard();
  const tools = guardTools<StructuredToolInterface>(
    guard,
    [
      tool(runSql, { name: 'run_sql', description: 'Run one SQL statement', schema: z.object({ query: z.string() }) }),
      tool(deploy, { name: 'deploy', description: 'Deploy a service', schema: z.object({ service: z.string(), environment: z.string() }) }),
    ],
    { onDecision: printDecision },
  );
  try {
    for (const call of CALLS) {
      // The fake model's one scripted answer: a call of the tool.
      const model = new FakeStreamingChatModel({
        chunks: [new AIMessageChunk({ content: '', tool_calls: [{ id: 'call-1', name: call.tool, args: call.args, type: 'tool_call' }] })],
      });
      const ai = await model.bindTools(tools).invoke([new HumanMessage(call.label)]);
      for (const toolCall of ai.tool_calls ?? []) {
        const chosen = tools.find((t) => t.name === toolCall.name)!;
        const message = (await chosen.invoke(toolCall)) as ToolMessage;
        printModelRead(`[${message.status}] ${typeof message.content === 'string' ? message.content : JSON.stringify(message.content)}`);
      }
    }
  } finally {
    await guard.shutdown();
  }
}

main().catch(exitOnFailure);
