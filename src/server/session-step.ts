/**
 * One step of a session on the evaluation route (docs/sessions.md): the session's labels
 * are read (and the step counted) before the step is evaluated, and the labels its matches
 * added are stored before the answer goes out, so the session's next step, on any replica,
 * sees them. A failure to read or store them fails the request (a 5xx the client's fail
 * mode handles), never an answer given as if the session had no labels.
 */
import { evaluateStep, sessionOutcome, type CompiledControlSet, type EvaluateOptions, type EvaluationOutcome } from '../engine/index.js';
import type { EvaluationRequest, EvaluationResult } from '../model/index.js';
import type { SessionState, SessionStep } from '../sessions/index.js';
import { serverDenyResult } from './refusal-result.js';

export function evaluateInSession(
  set: CompiledControlSet,
  body: EvaluationRequest,
  sessionId: string,
  base: EvaluateOptions,
  sessions: SessionState,
): Promise<EvaluationOutcome> | EvaluationOutcome {
  // In memory (SQLite) every part is synchronous: the step then waits for no promise at
  // all, as a step without a session does (each await would cost a turn of the microtask queue).
  const begun = sessions.begin(body.agent_name, sessionId);
  if (begun instanceof Promise) return begun.then((b) => stepWith(set, body, sessionId, base, sessions, b));
  return stepWith(set, body, sessionId, base, sessions, begun);
}

function stepWith(
  set: CompiledControlSet,
  body: EvaluationRequest,
  sessionId: string,
  base: EvaluateOptions,
  sessions: SessionState,
  begun: SessionStep | null,
): Promise<EvaluationOutcome> | EvaluationOutcome {
  if (begun === null) {
    // GUARD_SESSION_MAX reached and this would be a new session: no labels can be kept
    // for it. A set whose session-aware controls could deny or steer fails closed; one
    // whose session-aware controls only allow, warn or log runs without the session.
    if (failsClosedAtBound(set)) return { result: sessionLimitResult(), executions: [] };
    return evaluateStep(set, body.step, body.stage, base);
  }
  const session = { id: sessionId, labels: begun.labels };
  const options: EvaluateOptions = {
    execution: base.execution,
    collectExecutions: base.collectExecutions,
    excerpts: base.excerpts,
    agentName: body.agent_name,
    counters: base.counters,
    session,
  };
  const finish = (outcome: EvaluationOutcome): Promise<EvaluationOutcome> | EvaluationOutcome => {
    const { result, added } = sessionOutcome(outcome.result, set, session);
    const stored = sessions.add(body.agent_name, sessionId, begun, added, body.stage, body.step.name);
    const answered = { result, executions: outcome.executions };
    return stored instanceof Promise ? stored.then(() => answered) : answered;
  };
  const pending = evaluateStep(set, body.step, body.stage, options);
  return pending instanceof Promise ? pending.then(finish) : finish(pending);
}

/**
 * A session-aware control that can stop a step (deny, steer, ask) and fails closed. A
 * control that only marks (log, warn, allow) fails closed by adding its labels, which the
 * refused session cannot keep anyway; a deny that needs them is session-aware itself.
 */
function failsClosedAtBound(set: CompiledControlSet): boolean {
  return set.controls.some((c) => c.sessionAware && !c.shadow && c.onError === 'deny' && (c.decision === 'deny' || c.decision === 'steer' || c.decision === 'ask'));
}

/** The answer for a step that would start a session beyond GUARD_SESSION_MAX (like the depth limit: control_id 0). */
export function sessionLimitResult(): EvaluationResult {
  return serverDenyResult(
    'session-limit',
    'the server holds as many sessions as GUARD_SESSION_MAX allows, so this new session cannot be kept; the step is denied',
  );
}
