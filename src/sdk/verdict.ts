/**
 * A step's verdict as adapters need it: the decision, who decided, and the text a model
 * may read. That text is what a framework hands back to the model as the tool's (or the
 * call's) error, so it is written for the model (what happened, what to do next) and
 * reveals only as much of the deciding control as the guard's `disclosure` allows: a
 * control's name and its evaluator's message can tell an adversarial prompt what the
 * rule looks for.
 */
import type { ApprovalRef, EvaluationResult, Stage, SteeringContext } from '../model/index.js';
import type { GuardError } from './errors.js';
import { decidingMatch } from './merge.js';

/**
 * How much of the deciding control the model may see:
 * - `minimal` (default): the decision, and for steer the steering context (written by the
 *   control's author for the model to act on); never the control's name or the
 *   evaluator's message;
 * - `name`: also the control's name;
 * - `full`: also the evaluator's message (for example `pattern matched "DR…LE"`).
 */
export type Disclosure = 'minimal' | 'name' | 'full';

export const DISCLOSURES: readonly Disclosure[] = ['minimal', 'name', 'full'];

export interface Verdict {
  /** `ask`: a person must approve this exact step first; `approval` names the question. */
  decision: 'allow' | 'deny' | 'steer' | 'ask';
  /** The server's approval of this step (ask: pending; allow: the approval it used; deny: denied or expired). */
  approval?: ApprovalRef;
  /** The deciding control (deny or steer), for the application; null on allow. */
  control_name: string | null;
  /** The text for the model, within the guard's disclosure; null on allow. */
  message: string | null;
  steering_context: SteeringContext | null;
  /** The deciding evaluator's message, for the application only (never in `message` below `full`). */
  detail: string | null;
  /** True when the step could not be checked and failMode `closed` denied it. */
  unavailable: boolean;
  /** The merged result; null when the step could not be checked. */
  result: EvaluationResult | null;
  /**
   * What `check` would raise (ControlViolationError, ControlSteerError or
   * GuardUnavailableError, with `message` as its message); null on allow. Adapters throw it
   * where a framework turns a thrown error into a tool error the model reads.
   */
  error: GuardError | null;
}

/** What the model reads about a decision, in the words of `disclosure`. */
export interface ModelTextInput {
  decision: 'deny' | 'steer' | 'ask';
  stage: Stage;
  controlName: string | null;
  detail: string | null;
  steering: SteeringContext | null;
}

export function modelTextOf(input: ModelTextInput, disclosure: Disclosure): string {
  const who = disclosure !== 'minimal' && input.controlName !== null ? ` by control "${input.controlName}"` : '';
  const why = disclosure === 'full' && input.detail ? ` (${input.detail})` : '';
  if (input.decision === 'ask') {
    return input.stage === 'pre'
      ? `Waiting for approval${who}: a person must approve this exact call before it runs. It was not run.`
      : `Result withheld${who}: a person must approve this result before it is used.`;
  }
  if (input.decision === 'deny') {
    return input.stage === 'pre'
      ? `Blocked${who}${why}: this call was not run. Do not retry it as it is.`
      : `Blocked${who}${why}: the call ran, but its result is withheld.`;
  }
  const steering = input.steering ?? { message: 'this call needs correcting' };
  const lines = [`${input.stage === 'pre' ? 'Not run' : 'Result withheld'}${who}${why}: ${steering.message}`];
  const actions = steering.required_actions ?? [];
  if (actions.length > 0) lines.push('Required actions:', ...actions.map((a) => `- ${a}`));
  lines.push('Correct the call as required, then try again.');
  return lines.join('\n');
}

/** The text of an approval error: the model text, and what became of the approval (never the step). */
export function approvalTextOf(approval: ApprovalRef, modelText: string): string {
  switch (approval.status) {
    case 'pending':
      return `${modelText} (approval ${approval.id} is pending until ${approval.expires_at})`;
    case 'denied':
      return `Not run: a person denied this call (approval ${approval.id})${approval.reason ? `: ${approval.reason}` : ''}. Do not retry it as it is.`;
    case 'expired':
      return `Not run: nobody approved this call before ${approval.expires_at} (approval ${approval.id}).`;
    case 'approved':
      return modelText;
  }
}

/** The model's text when the guard could not check the step: nothing about why (URLs, errors). */
export function unavailableTextOf(stage: Stage): string {
  return stage === 'pre'
    ? 'Not run: the guard could not check this call, so it was not run. Try again later.'
    : 'Result withheld: the guard could not check the result of this call.';
}

export function verdictOf(result: EvaluationResult, stage: Stage, disclosure: Disclosure): Verdict {
  const decision = result.decision;
  if (decision === 'allow') {
    const allowed: Verdict = { decision, control_name: null, message: null, steering_context: null, detail: null, unavailable: false, result, error: null };
    if (result.approval !== undefined) allowed.approval = result.approval;
    return allowed;
  }
  const decider = decidingMatch(result);
  const controlName = decider?.control_name ?? null;
  const detail = decider ? (decider.result.message ?? decider.error ?? null) : null;
  const steering = decision === 'steer' ? (result.steering_context ?? decider?.steering_context ?? { message: 'steer control matched' }) : null;
  const verdict: Verdict = {
    decision,
    control_name: controlName,
    message: modelTextOf({ decision, stage, controlName, detail, steering }, disclosure),
    steering_context: steering,
    detail,
    unavailable: false,
    result,
    error: null,
  };
  if (result.approval !== undefined) verdict.approval = result.approval;
  return verdict;
}

export function unavailableVerdict(stage: Stage): Verdict {
  return {
    decision: 'deny',
    control_name: null,
    message: unavailableTextOf(stage),
    steering_context: null,
    detail: null,
    unavailable: true,
    result: null,
    error: null,
  };
}
