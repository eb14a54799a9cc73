/**
 * What the SDK raises when a step may not go on. Callers catch these by class:
 * ControlViolationError (deny), ControlSteerError (steer: correct and retry) and
 * GuardUnavailableError (the checks could not be done and failMode is `closed`).
 */
import { ApiError } from '../errors.js';
import type { ApprovalStatus, EvaluationResult, JsonObject, SteeringContext } from '../model/index.js';

/** Base class of everything the SDK raises about a checked step. */
export class GuardError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message);
    this.name = 'GuardError';
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/**
 * A deny control matched: the step must not run (pre) or its output must not be used (post).
 * The message is written for the model a framework shows it to, within the guard's
 * disclosure (verdict.ts); the properties tell the application everything.
 */
export class ControlViolationError extends GuardError {
  constructor(
    readonly controlId: number,
    readonly controlName: string,
    /** The evaluator's message, for example `pattern matched "D…E"` (what matched is masked unless the control sets reveal_match). */
    readonly detail: string | null,
    /** The control's `action.metadata` (reason, severity, ...), or null. */
    readonly metadata: JsonObject | null,
    readonly result: EvaluationResult,
    /** What the model may read (verdict.ts modelTextOf). */
    message: string,
  ) {
    super(message);
    this.name = 'ControlViolationError';
  }
}

/**
 * A steer control matched (and no deny): correct the step as the steering context says,
 * then retry. The message holds the steering message and every required action, so a
 * model that reads only the error text still knows what to do.
 */
export class ControlSteerError extends GuardError {
  constructor(
    readonly controlId: number | null,
    readonly controlName: string | null,
    readonly steeringContext: SteeringContext,
    readonly metadata: JsonObject | null,
    readonly result: EvaluationResult,
    /** What the model may read (verdict.ts modelTextOf): the steering message and the required actions. */
    message: string,
  ) {
    super(message);
    this.name = 'ControlSteerError';
  }

  get requiredActions(): string[] {
    return this.steeringContext.required_actions ?? [];
  }
}

/**
 * An ask control matched and no person allowed the step: still pending (with
 * `approval: 'throw'`, or when the caller's `approvalTimeout` ran out), denied (with the
 * approver's reason) or expired. Not a ControlViolationError: the step was not judged
 * wrong, a person has not said yes. `approvalId` is what `GET /api/v1/approvals/{id}` and
 * `guardctl approvals show` take, so an agent that pauses can resume on the same question.
 */
export class ApprovalError extends GuardError {
  constructor(
    readonly approvalId: string,
    readonly status: ApprovalStatus,
    /** When the question expires (ISO time). */
    readonly expiresAt: string,
    /** The approver's reason of a denial, when given. */
    readonly reason: string | null,
    readonly result: EvaluationResult | null,
    message: string,
  ) {
    super(message);
    this.name = 'ApprovalError';
  }
}

/**
 * The step could not be checked: the server was needed and unreachable or answered
 * garbage, or a control in scope could not be compiled locally. Raised only with
 * failMode `closed` (the default); with `open` the SDK logs and lets the step go on.
 */
export class GuardUnavailableError extends GuardError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'GuardUnavailableError';
  }
}

/**
 * `init` for an agent with no controls in force (unknown to the server, none linked, or
 * all disabled or in shadow mode): every step would run unchecked, which is most often a
 * misspelt agent name. `suggestions` are the known agents whose names are close to it.
 * Not raised with `allowUnguarded: true`.
 */
export class UnguardedAgentError extends GuardError {
  constructor(
    readonly agentName: string,
    /** False when the server did not know the agent (nothing was registered). */
    readonly registered: boolean,
    readonly suggestions: readonly string[],
    message: string,
  ) {
    super(message);
    this.name = 'UnguardedAgentError';
  }
}

/**
 * Statuses that say the step itself cannot be checked: malformed or not UTF-8 (400), over
 * the body limit (413), not JSON (415), invalid (422). A model could write such a step on
 * purpose, so they deny whatever the fail mode.
 */
const STEP_REFUSALS = new Set([400, 413, 415, 422]);

/** The error to raise when the server refused `what` for its content; null for anything else (an outage). */
export function stepRefusalOf(error: unknown, what: string): GuardUnavailableError | null {
  if (!(error instanceof ApiError) || !STEP_REFUSALS.has(error.status)) return null;
  return new GuardUnavailableError(`the server refused to check ${what}: HTTP ${error.status}: ${error.message}`, { cause: error });
}
