/**
 * `guardctl/openai-agents`: tool guardrails for the OpenAI Agents SDK (`@openai/agents`).
 *
 *   const guardrails = guardrailsFor(guard);
 *   const runSql = tool({ name: 'run_sql', parameters, execute, ...guardrails });
 *
 * The input guardrail checks a call before the tool runs (`pre`, the tool's name and its
 * parsed arguments); the output guardrail checks its result (`post`). A deny or steer is
 * the SDK's reject behaviour: the tool does not run (or its result is replaced) and the
 * model reads the verdict's text as the tool's output. With `deny: 'throw'` a deny ends
 * the run instead (the SDK's tripwire exception). The verdict is also in the guardrail
 * result's `outputInfo` and goes to `onDecision`.
 *
 * Sessions (docs/sessions.md): unless `sessionId` is given (here or to `init`), a run's
 * steps belong to the session of its trace's group id (a conversation spanning runs, set
 * with the run's `groupId`), else of its trace id (one per run), else (tracing off) of
 * the run itself.
 */
import type {
  getCurrentTrace,
  ToolGuardrailFunctionOutput,
  ToolInputGuardrailDefinition,
  ToolOutputGuardrailDefinition,
} from '@openai/agents';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';
import { decide, derivedSessionId, parseJsonText, type AdapterOptions } from './decisions.js';

export type { AdapterOptions, GuardDecision } from './decisions.js';

export interface GuardrailsOptions extends AdapterOptions {
  /** What a deny does: `reject` (default) answers the model, `throw` ends the run. Steers always reject. */
  deny?: 'reject' | 'throw';
}

export interface GuardToolGuardrails {
  inputGuardrails: ToolInputGuardrailDefinition[];
  outputGuardrails: ToolOutputGuardrailDefinition[];
}

/** What the application finds in a guardrail result's outputInfo. */
export interface GuardrailInfo {
  decision: Verdict['decision'];
  control_name: string | null;
  unavailable: boolean;
}

/** Guardrails for `tool({...})`: spread them into the tool's options. */
export function guardrailsFor(guard: GuardAgent, options: GuardrailsOptions = {}): GuardToolGuardrails {
  const behaviour = (verdict: Verdict): ToolGuardrailFunctionOutput => {
    const outputInfo: GuardrailInfo = { decision: verdict.decision, control_name: verdict.control_name, unavailable: verdict.unavailable };
    if (verdict.decision === 'allow') return { behavior: { type: 'allow' }, outputInfo };
    if (verdict.decision === 'deny' && options.deny === 'throw') return { behavior: { type: 'throwException' }, outputInfo };
    return { behavior: { type: 'rejectContent', message: verdict.message! }, outputInfo };
  };
  return {
    inputGuardrails: [
      {
        type: 'tool_input',
        name: 'guardctl',
        run: async ({ context, toolCall }) => behaviour(await decide(guard, stepOf(toolCall), 'pre', options, await sessionOfRun(context))),
      },
    ],
    outputGuardrails: [
      {
        type: 'tool_output',
        name: 'guardctl',
        run: async ({ context, toolCall, output }) => behaviour(await decide(guard, { ...stepOf(toolCall), output }, 'post', options, await sessionOfRun(context))),
      },
    ],
  };
}

let readTrace: typeof getCurrentTrace | undefined;

/** Sessions of runs whose trace says nothing (tracing off), by the run's context object. */
const runSessions = new WeakMap<object, string>();

/**
 * The run's trace group id (a conversation), else its trace id, else (tracing off: every
 * run has the same no-op trace) one id per run context.
 */
async function sessionOfRun(context: object): Promise<string> {
  // Loaded on first use: importing this adapter needs no @openai/agents (it is an optional
  // peer of @guardctl/sdk), and a run that reaches here has it loaded already.
  readTrace ??= (await import('@openai/agents')).getCurrentTrace;
  const trace = readTrace();
  if (trace && trace.traceId !== NO_OP_TRACE) {
    if (typeof trace.groupId === 'string' && trace.groupId !== '') return derivedSessionId('openai-agents:group', trace.groupId);
    if (trace.traceId) return derivedSessionId('openai-agents:trace', trace.traceId);
  }
  let id = runSessions.get(context);
  if (id === undefined) runSessions.set(context, (id = `openai-agents:run:${globalThis.crypto.randomUUID()}`));
  return id;
}

/** The trace id the SDK gives every run while tracing is off. */
const NO_OP_TRACE = 'no-op';

function stepOf(toolCall: { name: string; arguments: string }): StepInput {
  return { type: 'tool', name: toolCall.name, input: parseJsonText(toolCall.arguments) };
}
