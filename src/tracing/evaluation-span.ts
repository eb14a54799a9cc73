/**
 * What the `guardctl.evaluate` span of one evaluated step says: its attributes, an event
 * per matched (or failed) control, and whether it is an error. The server and the SDK
 * (`execution: sdk` controls, in the agent's process) describe their spans here, so both
 * read alike. Nothing of the step's content is described unless `includeContent`, and then
 * only what events carry: messages and excerpts the engine has already masked
 * (engine/present.ts). PURE.
 */
import type { EvaluationResult } from '../model/index.js';
import { SPAN_STATUS, type Attributes, type SpanLike } from './types.js';

export const EVALUATE_SPAN = 'guardctl.evaluate';

/** The parts of the engine's ControlExecution a span uses. */
export interface ExecutionFacts {
  control_id: number;
  control_name: string;
  action: string;
  matched: boolean;
  error_message: string | null;
  evaluator_name: string;
  duration_ms: number;
  mode?: 'enforce' | 'shadow' | undefined;
  message?: string | null | undefined;
  excerpt?: string | null | undefined;
}

export interface EvaluationFacts {
  agent: string;
  stage: string;
  step: { type: string; name: string };
  result: EvaluationResult;
  /** Per control; null when the engine did not collect them (then events come from the result). */
  executions: readonly ExecutionFacts[] | null;
  /** The store revision of the agent's control set; null when not known. */
  setRevision: number | null;
  includeContent: boolean;
}

export interface SpanEventDescription {
  name: string;
  attributes: Attributes;
}

export interface EvaluationSpanDescription {
  attributes: Attributes;
  events: SpanEventDescription[];
  /** The status message when an evaluator failed; null otherwise (a deny is not an error). */
  error: string | null;
}

export function describeEvaluation(facts: EvaluationFacts): EvaluationSpanDescription {
  const { result, executions } = facts;
  const attributes: Attributes = {
    'guardctl.agent': facts.agent,
    'guardctl.stage': facts.stage,
    'guardctl.step.type': facts.step.type,
    'guardctl.step.name': facts.step.name,
    'guardctl.decision': result.decision,
    'guardctl.controls.matched': result.matches.map((m) => m.control_name),
    'guardctl.controls.evaluated':
      executions?.length ?? result.matches.length + result.errors.length + result.non_matches.length + result.shadow_matches.length,
  };
  if (facts.setRevision !== null) attributes['guardctl.set_revision'] = facts.setRevision;
  const events = executions ? eventsOfExecutions(executions, facts.includeContent) : eventsOfResult(result, facts.includeContent);
  const failed = result.errors[0];
  const error = failed
    ? `evaluator error in control "${failed.control_name}"${result.errors.length > 1 ? ` and ${result.errors.length - 1} more` : ''}`
    : null;
  return { attributes, events, error };
}

function eventsOfExecutions(executions: readonly ExecutionFacts[], includeContent: boolean): SpanEventDescription[] {
  const events: SpanEventDescription[] = [];
  for (const e of executions) {
    const failed = e.error_message !== null;
    if (!e.matched && !failed) continue;
    const attributes: Attributes = {
      'guardctl.control.id': e.control_id,
      'guardctl.control.name': e.control_name,
      'guardctl.control.action': e.action,
      'guardctl.control.evaluator': e.evaluator_name,
      'guardctl.control.duration_ms': e.duration_ms,
      'guardctl.control.matched': e.matched,
    };
    if (e.mode === 'shadow') attributes['guardctl.control.mode'] = 'shadow';
    if (includeContent) {
      if (e.error_message !== null) attributes['guardctl.control.error'] = e.error_message;
      else if (e.message) attributes['guardctl.control.message'] = e.message;
      if (e.excerpt) attributes['guardctl.control.excerpt'] = e.excerpt;
    }
    events.push({ name: failed ? 'guardctl.control.error' : 'guardctl.control.matched', attributes });
  }
  return events;
}

/** Without executions (no durations, no evaluator names): the result's matches and errors. */
function eventsOfResult(result: EvaluationResult, includeContent: boolean): SpanEventDescription[] {
  const of = (name: string, list: EvaluationResult['matches'], mode: 'enforce' | 'shadow') =>
    list.map((m) => {
      const attributes: Attributes = {
        'guardctl.control.id': m.control_id,
        'guardctl.control.name': m.control_name,
        'guardctl.control.action': m.action,
        'guardctl.control.matched': m.result.matched,
      };
      if (mode === 'shadow') attributes['guardctl.control.mode'] = 'shadow';
      if (includeContent) {
        if (m.error !== undefined) attributes['guardctl.control.error'] = m.error;
        else if (m.result.message) attributes['guardctl.control.message'] = m.result.message;
      }
      return { name, attributes };
    });
  return [
    ...of('guardctl.control.matched', result.matches, 'enforce'),
    ...of('guardctl.control.matched', result.shadow_matches, 'shadow'),
    ...of('guardctl.control.error', result.errors, 'enforce'),
  ];
}

/** Writes a description onto a span (a recording one: describing costs nothing otherwise). */
export function applyDescription(span: SpanLike, description: EvaluationSpanDescription): void {
  span.setAttributes(description.attributes);
  for (const event of description.events) span.addEvent(event.name, event.attributes);
  if (description.error !== null) span.setStatus({ code: SPAN_STATUS.error, message: description.error });
}

/** Ends an evaluation's span with what the step came to (described only when the span records). */
export function endEvaluationSpan(span: SpanLike, facts: EvaluationFacts): void {
  if (span.isRecording()) applyDescription(span, describeEvaluation(facts));
  span.end();
}

/**
 * Ends the span of a request that did not come to a decision. A refused request (a 4xx:
 * invalid step, unknown agent) is the caller's mistake, not the guard's failure: only
 * errors of the server itself set the error status.
 */
export function endFailedSpan(span: SpanLike, error: unknown): void {
  if (span.isRecording()) {
    const e = (typeof error === 'object' && error !== null ? error : {}) as { status?: unknown; statusCode?: unknown };
    const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : 500;
    span.setAttributes({ 'http.response.status_code': status });
    if (status >= 500) span.setStatus({ code: SPAN_STATUS.error, message: 'the server could not evaluate the step' });
  }
  span.end();
}
