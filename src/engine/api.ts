/**
 * The engine's public contract. Implementation lives beside this file; everything here
 * is pure (no I/O) so that the server, the SDK, `guardctl test` and replay share it.
 */
import type { ControlData, ControlMode, EvaluationResult, FieldIssue } from '../model/index.js';
import type { Counters } from '../counting/index.js';

/** What the engine needs of a control: its id, name and (validated) data. */
export interface ControlInput {
  control_id: number;
  name: string;
  data: ControlData | null;
}

/** Per control, what happened during one evaluation (for observability events). */
export interface ControlExecution {
  control_id: number;
  control_name: string;
  action: ControlData['action']['decision'];
  matched: boolean;
  confidence: number;
  /** Set when the evaluator threw; on_error decided `matched`. */
  error_message: string | null;
  /** First leaf's evaluator and selector for condition trees. */
  evaluator_name: string;
  selector_path: string;
  /** Every selector path the control reads; set by the engine (masking shadow examples). */
  selector_paths?: readonly string[];
  duration_ms: number;
  /** Absent means `enforce`; the engine sets it. */
  mode?: ControlMode;
  /** The evaluator's message (or the error text). Always set by the engine. */
  message?: string | null;
  /**
   * For matched controls: the selected value as text, at most 200 characters; else null.
   * Set by the engine unless asked not to (EvaluateOptions.excerpts); unset, readers show
   * the selected value masked whole.
   */
  excerpt?: string | null;
  /** True when the control's selector found nothing in the step (see ControlMatch.selector_missing). */
  selector_missing?: boolean;
}

export interface EvaluateOptions {
  /** Also return per-control executions with durations (costs a clock read per control). */
  collectExecutions?: boolean;
  /**
   * With collectExecutions: the excerpt of each match (true unless false). Masking the
   * selected text costs more than the rest of an execution; the server asks for excerpts
   * only while something shows them (a live stream, spans with content). Without,
   * `excerpt` is left unset.
   */
  excerpts?: boolean;
  /** Only controls whose `execution` is this value take part (the SDK splits sdk/server). */
  execution?: 'server' | 'sdk';
  /** The agent the step belongs to: the default key of rate and budget controls. */
  agentName?: string;
  /** Where rate and budget controls count (the server's); without them those controls fail (on_error). */
  counters?: Counters;
  /**
   * The step's session, for sets with session-aware controls: its id (repeat counts per
   * session) and its labels before this step. Absent: the step has no session (no labels).
   */
  session?: StepSession;
}

export interface StepSession {
  readonly id: string;
  readonly labels: ReadonlySet<string>;
}

export interface EvaluationOutcome {
  result: EvaluationResult;
  executions: ControlExecution[] | null;
}

export type ValidationOutcome =
  | { ok: true; data: ControlData }
  | { ok: false; issues: FieldIssue[] };
