/**
 * What every framework adapter shares: a step checked through `guard.verdict`, and the
 * application told about each verdict (the model only ever reads `verdict.message`).
 */
import type { Stage } from '../model/index.js';
import type { GuardAgent, StepInput } from '../sdk/agent.js';
import type { Verdict } from '../sdk/verdict.js';

/** One checked stage of one step, as an adapter reports it to the application. */
export interface GuardDecision {
  step: StepInput;
  stage: Stage;
  verdict: Verdict;
}

export interface AdapterOptions {
  /**
   * Called with every verdict (allow included), before the framework goes on. A callback
   * that throws stops the step: the adapter never lets a step through on an error.
   */
  onDecision?: ((decision: GuardDecision) => void) | undefined;
}

/**
 * Checks one stage of a step and reports the verdict. A step an ask control holds is
 * waited on as the SDK's `check` waits (docs/approvals.md): the framework's call goes on
 * once a person approves it, or gets the approval error.
 */
export async function decide(guard: GuardAgent, step: StepInput, stage: Stage, options: AdapterOptions): Promise<Verdict> {
  let verdict = await guard.verdict(step, stage);
  if (verdict.decision === 'ask') verdict = await guard.awaitApproval(step, stage, verdict);
  options.onDecision?.({ step, stage, verdict });
  return verdict;
}

/** Checks one stage and raises the verdict's error (a deny, a steer, or fail closed). */
export async function enforce(guard: GuardAgent, step: StepInput, stage: Stage, options: AdapterOptions): Promise<void> {
  const verdict = await decide(guard, step, stage, options);
  if (verdict.error) throw verdict.error;
}

/** Tool arguments that arrive as JSON text: controls select into the parsed value (or read the text when it is not JSON). */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
