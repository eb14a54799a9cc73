import { randomUUID } from 'node:crypto';
import type { ControlExecution } from '../engine/api.js';
import { maskMatch } from '../evaluators/mask.js';
import type { TraceIds } from './trace.js';
import type {
  ControlMatch,
  EvaluationResult,
  EvaluationSummary,
  ObservabilityEvent,
  Stage,
  Step,
  SummaryMatch,
} from '../model/index.js';

export interface RecordEvaluationInput {
  agent_name: string;
  stage: Stage;
  step: Step;
  /** From the engine; `executions` is set when it was asked to collect them. */
  outcome: { result: EvaluationResult; executions: ControlExecution[] | null };
  /** The store revision of the control set that decided it (see ObservabilityEvent.set_revision). */
  set_revision?: number | null;
  /** The request's `session_id`; null or absent when the step had none. */
  session_id?: string | null | undefined;
  /**
   * The request's trace and span ids, asked for only when a stored row or a stream
   * summary needs them: most evaluations only add to rollups, and reading the headers
   * and drawing fresh ids cost more than the rest of recording.
   */
  trace(): TraceIds;
  /** The agent had no control in force: every step it sends is allowed unchecked. */
  unguarded?: boolean;
}

const EXCERPT_LENGTH = 200;

/** Per-control executions; rebuilt from the result lists (without timings) when not collected. */
export function executionsOf(input: RecordEvaluationInput): ControlExecution[] {
  if (input.outcome.executions) return input.outcome.executions;
  const { result } = input.outcome;
  const out: ControlExecution[] = [];
  const add = (m: ControlMatch, matched: boolean, mode: 'enforce' | 'shadow' = 'enforce') =>
    out.push({
      control_id: m.control_id,
      control_name: m.control_name,
      action: m.action,
      matched,
      confidence: m.result.confidence,
      error_message: m.error ?? null,
      evaluator_name: '',
      selector_path: '',
      duration_ms: 0,
      mode,
      selector_missing: m.selector_missing === true,
    });
  for (const m of result.matches) add(m, true);
  for (const m of result.shadow_matches) add(m, true, 'shadow');
  for (const m of result.errors) add(m, m.result.matched);
  for (const m of result.non_matches) add(m, false);
  return out;
}

/** The result metadata of each control that reported some, by control id. */
export function metadataByControl(result: EvaluationResult): Map<number, Record<string, unknown>> | null {
  let map: Map<number, Record<string, unknown>> | null = null;
  for (const list of [result.matches, result.errors, result.non_matches, result.shadow_matches]) {
    for (const m of list) {
      if (m.result.metadata) (map ??= new Map()).set(m.control_id, m.result.metadata);
    }
  }
  return map;
}

/** One stored event per control evaluated. */
export function eventsOf(
  input: RecordEvaluationInput,
  executions: readonly ControlExecution[],
  timestamp: string,
): ObservabilityEvent[] {
  const metadata = metadataByControl(input.outcome.result);
  const ids = input.trace();
  const events: ObservabilityEvent[] = new Array<ObservabilityEvent>(executions.length);
  for (let i = 0; i < executions.length; i++) events[i] = eventOf(input, ids, executions[i]!, timestamp, metadata);
  return events;
}

/** The stored event of one execution; `metadata` is metadataByControl's map (built once per evaluation). */
export function eventOf(
  input: RecordEvaluationInput,
  ids: TraceIds,
  x: ControlExecution,
  timestamp: string,
  metadata: Map<number, Record<string, unknown>> | null,
): ObservabilityEvent {
  const event: ObservabilityEvent = {
    control_execution_id: randomUUID(),
    trace_id: ids.trace_id,
    span_id: ids.span_id,
    agent_name: input.agent_name,
    control_id: x.control_id,
    control_name: x.control_name,
    check_stage: input.stage,
    applies_to: input.step.type,
    action: x.action,
    matched: x.matched,
    confidence: x.confidence,
    timestamp,
    execution_duration_ms: x.duration_ms,
    evaluator_name: x.evaluator_name || null,
    selector_path: x.selector_path || null,
    error_message: x.error_message,
    metadata: metadata?.get(x.control_id) ?? null,
    mode: x.mode ?? 'enforce',
    set_revision: input.set_revision ?? null,
    session_id: input.session_id ?? null,
  };
  // Set only when true, and not by spreading a conditional object: spreading made each
  // event a copy through V8's generic object-cloning path.
  if (x.selector_missing === true) event.selector_missing = true;
  return event;
}

/**
 * A non-match is rolled up instead of stored as a row (unless sampled). One whose selector
 * found nothing is kept as a row, like an error: it is a misconfiguration to fix.
 */
export function isNonMatch(x: { matched: boolean; error_message: string | null; selector_missing?: boolean | undefined }): boolean {
  return !x.matched && x.error_message === null && x.selector_missing !== true;
}

/** Walks a selector path (`input.a.b[0]`, `name`, `*`) for the stream's excerpt. */
export function selectForExcerpt(step: Step, path: string): unknown {
  if (path === '') return undefined;
  if (path === '*') return step;
  let value: unknown = step;
  for (const part of path.split(/\.|\[(\d+)\]/)) {
    if (part === undefined || part === '') continue;
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

export function excerptOf(value: unknown): string | null {
  if (value === undefined) return null;
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  } catch {
    return null;
  }
  return text.length > EXCERPT_LENGTH ? `${text.slice(0, EXCERPT_LENGTH - 1)}…` : text;
}

export function summaryOf(
  input: RecordEvaluationInput,
  ids: TraceIds,
  executions: readonly ControlExecution[],
  durationMs: number,
  timestamp: string,
): EvaluationSummary {
  const { result } = input.outcome;
  const byId = new Map<number, ControlExecution>();
  for (const x of executions) byId.set(x.control_id, x);
  // The engine sets the excerpt, masked as the control says (engine/present.ts); executions
  // rebuilt from a result (or built by hand) fall back to walking the selector path here,
  // and since what matched is then unknown, the excerpt is masked whole.
  const excerptFor = (id: number): string | null => {
    const x = byId.get(id);
    if (x?.excerpt !== undefined) return x.excerpt;
    const text = excerptOf(selectForExcerpt(input.step, x?.selector_path ?? ''));
    return text === null ? null : maskMatch(text);
  };
  const summaryMatch = (m: ControlMatch): SummaryMatch => ({
    control_id: m.control_id,
    control_name: m.control_name,
    action: m.action,
    message: m.result.message,
    steering_context: m.steering_context ?? null,
    excerpt: excerptFor(m.control_id),
  });
  return {
    id: randomUUID(),
    timestamp,
    trace_id: ids.trace_id,
    agent_name: input.agent_name,
    step_name: input.step.name,
    step_type: input.step.type,
    stage: input.stage,
    decision: result.decision,
    session_id: input.session_id ?? null,
    // The labels come with the result (after this step's own), so a detail view shows what
    // the session held at this step without a request per opened detail, and an older
    // step's labels stay what they were rather than the session's current ones.
    session_labels: result.session?.labels ?? null,
    duration_ms: durationMs,
    evaluated: executions.length,
    matches: result.matches.map(summaryMatch),
    shadow_matches: result.shadow_matches.map(summaryMatch),
    errors: result.errors.map((m) => ({
      control_id: m.control_id,
      control_name: m.control_name,
      message: m.error ?? m.result.message ?? 'evaluator error',
    })),
    ...(result.approval !== undefined && { approval: { id: result.approval.id, status: result.approval.status } }),
  };
}
