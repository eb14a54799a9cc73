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
 * Approvals (docs/approvals.md): `needsApproval` (spread with the guardrails) checks a call
 * first; a pending ask is the SDK's interruption (`result.interruptions`), and
 * `guardApprovalOf(guard, item)` names guardctl's approval for the application to show.
 * After `state.approve(item)` and `run(agent, state)`, the input guardrail checks the call
 * again: the tool runs only if guardctl's approval of that exact call is approved (by a
 * person through guardctl, or by the application with `decideApproval` and its approver
 * key); still pending, it waits (or, with `approval: 'throw'` on init, the model reads that
 * it waits). `approval: 'wait'` here makes no interruption: the guardrail waits instead.
 *
 * Sessions (docs/sessions.md): unless `sessionId` is given (here or to `init`), a run's
 * steps belong to the session of its trace's group id (a conversation spanning runs, set
 * with the run's `groupId`), else of its trace id (one per run), else (tracing off) of
 * the run itself, with the agents it runs as tools; a run resumed from its stored state
 * goes on in the session of the calls it approves (known to this process only).
 */
import type {
  getCurrentTrace,
  RunContext,
  ToolGuardrailFunctionOutput,
  ToolInputGuardrailDefinition,
  ToolOutputGuardrailDefinition,
} from '@openai/agents';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';
import { CallSessions } from './call-sessions.js';
import { decide, derivedSessionId, parseJsonText, report, sessionOf, type AdapterOptions } from './decisions.js';
import {
  approvalOfCall, isPendingAsk, keepVerdict, rememberApproval, takeVerdict, type FrameworkApprovalMode, type GuardApproval,
} from './framework-approval.js';

export type { AdapterOptions, GuardDecision } from './decisions.js';
export { decideApproval, type DecideApprovalOptions, type FrameworkApprovalMode, type GuardApproval } from './framework-approval.js';

export type ApprovalFunction = (runContext: RunContext, input: unknown, callId?: string) => Promise<boolean>;

export interface GuardrailsOptions extends AdapterOptions {
  /** What a deny does: `reject` (default) answers the model, `throw` ends the run. Steers always reject. */
  deny?: 'reject' | 'throw';
  /**
   * The tool's name: with it an ask interrupts the run for approval (the SDK does not pass
   * the name to needsApproval). Without it, or with `approval: 'wait'`, the guardrail waits
   * for the decision instead.
   */
  toolName?: string;
  /** What an ask does: `framework` (default, with `toolName`) interrupts the run; `wait` holds the call until decided. */
  approval?: FrameworkApprovalMode;
  /** The tool's own approval policy, asked first (the spread `needsApproval` replaces the tool's). */
  needsApproval?: boolean | ApprovalFunction;
}

export interface GuardToolGuardrails {
  inputGuardrails: ToolInputGuardrailDefinition[];
  outputGuardrails: ToolOutputGuardrailDefinition[];
  /** Set with `toolName` unless `approval: 'wait'`: a pending ask interrupts the run. */
  needsApproval?: ApprovalFunction;
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
  const guardrails: GuardToolGuardrails = {
    inputGuardrails: [
      {
        type: 'tool_input',
        name: 'guardctl',
        run: async ({ context, toolCall }) => {
          const step = stepOf(toolCall);
          // The verdict needsApproval kept for this call: the call is checked (and counted) once.
          const kept = takeVerdict(guard, toolCall.callId, step);
          return behaviour(kept ?? (await decide(guard, step, 'pre', options, await sessionOfRun(context, toolCall.callId))));
        },
      },
    ],
    outputGuardrails: [
      {
        type: 'tool_output',
        name: 'guardctl',
        run: async ({ context, toolCall, output }) => behaviour(await decide(guard, { ...stepOf(toolCall), output }, 'post', options, await sessionOfRun(context, toolCall.callId))),
      },
    ],
  };
  if (options.approval !== 'wait' && options.toolName !== undefined) guardrails.needsApproval = approvalCheck(guard, options.toolName, options);
  return guardrails;
}

/**
 * needsApproval: the tool's own policy first, then the pre check of the call. A pending ask
 * interrupts the run; any other verdict is kept for the input guardrail. Once the
 * application approves the interruption the SDK does not ask again: the input guardrail
 * checks the call, and only guardctl's approved approval lets it run.
 */
function approvalCheck(guard: GuardAgent, name: string, options: GuardrailsOptions): ApprovalFunction {
  const own = options.needsApproval;
  return async (runContext, input, callId) => {
    // The call is known to its run's session before the run can be interrupted for it: a
    // run resumed from its stored state (a new context) goes on in that session.
    const derived = await sessionOfRun(runContext, callId);
    if (own === true || (typeof own === 'function' && (await own(runContext, input, callId)))) return true;
    if (callId === undefined) return false; // nothing to tie a verdict to: the input guardrail checks the call
    // The SDK passes the parsed arguments, the guardrail reads the call's JSON text: as JSON they are the same step.
    const step: StepInput = { type: 'tool', name, input: JSON.parse(JSON.stringify(input ?? null)) as unknown };
    const sessionId = sessionOf(guard, options, derived);
    const verdict = await guard.verdict(step, 'pre', sessionId === undefined ? {} : { sessionId });
    report(options, step, 'pre', verdict, sessionId);
    if (isPendingAsk(verdict)) {
      rememberApproval(guard, callId, step, verdict);
      callSessions.asked(callId, derived);
      return true;
    }
    keepVerdict(guard, callId, step, verdict);
    return false;
  };
}

/**
 * guardctl's approval behind an interruption (`result.interruptions` item): its id, status
 * and expiry for the application to show. Undefined for an interruption of the tool's own policy.
 */
export function guardApprovalOf(guard: GuardAgent, item: { rawItem: unknown }): GuardApproval | undefined {
  const callId = (item.rawItem as { callId?: unknown } | null)?.callId;
  return typeof callId === 'string' ? approvalOfCall(guard, callId) : undefined;
}

let readTrace: typeof getCurrentTrace | undefined;

/**
 * Sessions of runs whose trace says nothing (tracing off), by the run's usage: the object
 * the SDK shares between a run's context and the contexts it forks for an agent run as a
 * tool with parameters or an input builder (`asTool`). By the context object, such a
 * nested agent would be a session of its own: the labels of what it read would not reach
 * the run that called it, nor the run's labels its steps.
 */
const runSessions = new WeakMap<object, string>();

function runOf(context: object): object {
  const usage = (context as { usage?: unknown }).usage;
  return typeof usage === 'object' && usage !== null ? usage : context;
}

/**
 * Sessions of runs whose trace says nothing, by the ids of the tool calls checked in them:
 * a run resumed from its stored state (`RunState.fromString`, after a person answered its
 * interruption) has a new context, and goes on in the session of the calls it approves.
 */
const callSessions = new CallSessions();

/**
 * The run's trace group id (a conversation), else its trace id, else (tracing off: every
 * run has the same no-op trace) one id per run (its context and the contexts forked from
 * it): that of the calls the context's approvals name when the run was resumed, else a
 * new one.
 */
async function sessionOfRun(context: object, callId?: string): Promise<string> {
  // Loaded on first use: importing this adapter needs no @openai/agents (it is an optional
  // peer of @guardctl/sdk), and a run that reaches here has it loaded already.
  readTrace ??= (await import('@openai/agents')).getCurrentTrace;
  const trace = readTrace();
  if (trace && trace.traceId !== NO_OP_TRACE) {
    if (typeof trace.groupId === 'string' && trace.groupId !== '') return derivedSessionId('openai-agents:group', trace.groupId);
    if (trace.traceId) return derivedSessionId('openai-agents:trace', trace.traceId);
  }
  const run = runOf(context);
  let id = runSessions.get(run);
  if (id === undefined) runSessions.set(run, (id = resumedSession(context, callId) ?? `openai-agents:run:${globalThis.crypto.randomUUID()}`));
  if (typeof callId === 'string' && callId !== '') {
    callSessions.checked(callId, id);
  }
  return id;
}

/**
 * The session of a resumed run (its context holds approvals): that of a call the approvals
 * name (approved or rejected), else of the call being checked, checked in an earlier run
 * (an approval for every call of a tool names none). Only a resumed run: a new one has no
 * approvals, so a call id another run's model also gave joins no session.
 */
function resumedSession(context: object, callId: string | undefined): string | undefined {
  const approvals = (context as { toJSON?: () => { approvals?: unknown } }).toJSON?.().approvals;
  if (typeof approvals !== 'object' || approvals === null) return undefined;
  const records = Object.values(approvals as Record<string, { approved?: unknown; rejected?: unknown } | null>);
  if (records.length === 0) return undefined;
  for (const record of records) {
    for (const ids of [record?.approved, record?.rejected]) {
      if (!Array.isArray(ids)) continue;
      for (const named of ids) {
        const id = typeof named === 'string' ? callSessions.sessionOf(named) : undefined;
        if (id !== undefined) return id;
      }
    }
  }
  return typeof callId === 'string' ? callSessions.sessionOf(callId) : undefined;
}

/** The trace id the SDK gives every run while tracing is off. */
const NO_OP_TRACE = 'no-op';

function stepOf(toolCall: { name: string; arguments: string }): StepInput {
  return { type: 'tool', name: toolCall.name, input: parseJsonText(toolCall.arguments) };
}
