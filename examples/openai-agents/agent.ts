/**
 * The OpenAI Agents SDK with guardctl/openai-agents: the runner drives a scripted model
 * (an implementation of the SDK's Model interface), and each tool carries the guard's
 * input and output guardrails. Tracing is off: nothing leaves the machine.
 *
 *   npm start                         # terminal 1: the server with controls/
 *   npm run example:openai-agents     # terminal 2
 */
import { Agent, Runner, setTracingDisabled, tool, Usage, type Model, type ModelRequest, type ModelResponse } from '@openai/agents';
import { z } from 'zod';
import { guardrailsFor } from '../../src/adapters/openai-agents.js';
import { CALLS, deploy, exitOnFailure, printDecision, printModelRead, runSql, startGuard, type ScriptedCall } from '../shared/scenario.js';

/** Calls the tool once, then answers with what it read back. */
class ScriptedModel implements Model {
  #turn = 0;
  constructor(private readonly call: ScriptedCall) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    if (this.#turn++ === 0) {
      return {
        usage: new Usage(),
        output: [{ type: 'function_call', callId: 'call-1', name: this.call.tool, arguments: JSON.stringify(this.call.args), status: 'completed' }],
      };
    }
    const items = typeof request.input === 'string' ? [] : request.input;
    const result = items.findLast((i) => i.type === 'function_call_result');
    const output = result?.type === 'function_call_result' ? result.output : null;
    const text = typeof output === 'string' ? output : output && 'text' in output ? String(output.text) : JSON.stringify(output);
    return { usage: new Usage(), output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }] };
  }

  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('this example does not stream');
  }
}

async function main(): Promise<void> {
  setTracingDisabled(true);
  const guard = await startGuard();
  const guardrails = guardrailsFor(guard, { onDecision: printDecision });
  const tools = [
    tool({ name: 'run_sql', description: 'Run one SQL statement', parameters: z.object({ query: z.string() }), execute: runSql, ...guardrails }),
    tool({ name: 'deploy', description: 'Deploy a service', parameters: z.object({ service: z.string(), environment: z.string() }), execute: deploy, ...guardrails }),
  ];
  const runner = new Runner({ tracingDisabled: true });
  try {
    for (const call of CALLS) {
      const agent = new Agent({ name: 'data-analyst', model: new ScriptedModel(call), tools });
      const result = await runner.run(agent, call.label);
      printModelRead(String(result.finalOutput));
    }
  } finally {
    await guard.shutdown();
  }
}

main().catch(exitOnFailure);
