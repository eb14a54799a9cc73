/**
 * What every framework adapter shares: a step checked through `guard.verdict`, and the
 * application told about each verdict (the model only ever reads `verdict.message`).
 */
import { createHash } from 'node:crypto';
import { isValidSessionId, type Stage } from '../model/index.js';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';

/** One checked stage of one step, as an adapter reports it to the application. */
export interface GuardDecision {
  step: StepInput;
  stage: Stage;
  verdict: Verdict;
  /** The client session the step belongs to (the MCP gateway's HTTP face: its Mcp-Session-Id). */
  sessionId?: string;
}

export interface AdapterOptions {
  /**
   * Called with every verdict (allow included), before the framework goes on. A callback
   * that throws stops the step: the adapter never lets a step through on an error.
   */
  onDecision?: ((decision: GuardDecision) => void) | undefined;
  /**
   * The session of the checked steps (docs/sessions.md); a function is read per step.
   * Default: the `sessionId` given to `init`, else the one the adapter derives from the
   * framework's run (docs/integrations.md).
   */
  sessionId?: string | (() => string | undefined) | undefined;
}

/**
 * Checks one stage of a step and reports the verdict. `derived` is the session the
 * adapter read off the framework's run; the options' and `init`'s come first. A step an
 * ask control holds is waited on as the SDK's `check` waits (docs/approvals.md): the
 * framework's call goes on once a person approves it, or gets the approval error.
 */
export async function decide(guard: GuardAgent, step: StepInput, stage: Stage, options: AdapterOptions, derived?: string): Promise<Verdict> {
  const sessionId = sessionOf(guard, options, derived);
  const checkOptions = sessionId === undefined ? {} : { sessionId };
  let verdict = await guard.verdict(step, stage, checkOptions);
  if (verdict.decision === 'ask') verdict = await guard.awaitApproval(step, stage, verdict, checkOptions);
  report(options, step, stage, verdict, sessionId);
  return verdict;
}

/** The session of a check: the options' first, then `init`'s, then the one derived from the framework's run. */
export function sessionOf(guard: GuardAgent, options: AdapterOptions, derived?: string): string | undefined {
  const given = typeof options.sessionId === 'function' ? options.sessionId() : options.sessionId;
  return given ?? guard.sessionId ?? derived;
}

/** Tells the application about a verdict (onDecision). */
export function report(options: AdapterOptions, step: StepInput, stage: Stage, verdict: Verdict, sessionId: string | undefined): void {
  options.onDecision?.({ step, stage, verdict, ...(sessionId !== undefined && { sessionId }) });
}

/** Checks one stage and raises the verdict's error (a deny, a steer, or fail closed). */
export async function enforce(guard: GuardAgent, step: StepInput, stage: Stage, options: AdapterOptions, derived?: string): Promise<void> {
  const verdict = await decide(guard, step, stage, options, derived);
  if (verdict.error) throw verdict.error;
}

/** A session id made from a framework's id: as it is when the server takes it, else its digest (too long, control characters). */
export function derivedSessionId(prefix: string, raw: string): string {
  const id = `${prefix}:${raw}`;
  return isValidSessionId(id) ? id : `${prefix}:sha256:${createHash('sha256').update(raw).digest('hex')}`;
}

/** Tool arguments that arrive as JSON text: controls select into the parsed value (or read the text when it is not JSON). */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
