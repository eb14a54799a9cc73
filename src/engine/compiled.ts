/**
 * PURE: the compiled form of a control, as build-control.ts makes it and evaluate.ts and
 * the compile cache use it. Types only (and the node kinds), so that every module of the
 * engine can name them without importing the one that builds them.
 */
import type { ControlData, ControlMatch, OnError, SteeringContext, StepType } from '../model/index.js';
import type { CompiledPattern } from '../evaluators/regex/re2.js';
import type { CompiledCheck } from '../evaluators/types.js';
import type { CompiledSelector } from './select.js';

export const NodeKind = { Leaf: 0, And: 1, Or: 2, Not: 3 } as const;

export interface CompiledLeaf {
  readonly kind: typeof NodeKind.Leaf;
  readonly selector: CompiledSelector;
  readonly check: CompiledCheck;
  readonly evaluatorName: string;
  /** The leaf's own `on_error`; undefined falls back to the control's. */
  readonly onError: OnError | undefined;
  /** The control's reveal_match: what the leaf found is shown in full (engine/present.ts). */
  readonly reveal: boolean;
  /** Set for evaluators that count on the server (rate, budget): why they need it. */
  readonly stateful?: string;
  /** Set for evaluators that count per session (repeat). */
  readonly perSession?: true;
}

export type CompiledNode =
  | CompiledLeaf
  | { readonly kind: typeof NodeKind.And | typeof NodeKind.Or; readonly children: readonly CompiledNode[] }
  | { readonly kind: typeof NodeKind.Not; readonly child: CompiledNode };

export interface CompiledControl {
  readonly control_id: number;
  readonly name: string;
  readonly decision: ControlData['action']['decision'];
  readonly steering_context: SteeringContext | null;
  /** `action.message` of a deny: the match's message the agent is shown, instead of the evaluator's. */
  readonly actionMessage: string | null;
  /** An ask control's `action.approval.timeout` in ms (default 15m); null for other decisions. */
  readonly approvalTimeoutMs: number | null;
  /** `mode: shadow`: evaluated and reported, never part of the decision. */
  readonly shadow: boolean;
  readonly execution: 'server' | 'sdk';
  readonly stages: ReadonlyArray<'pre' | 'post'>;
  readonly stepTypes: readonly StepType[];
  /** Null with nameRegex null: every step name is in scope. */
  readonly stepNames: ReadonlySet<string> | null;
  readonly nameRegex: CompiledPattern | null;
  readonly node: CompiledNode;
  /** on_error when the failing leaf sets none (flat controls: already merged). */
  readonly onError: OnError;
  /** First leaf's evaluator and selector, for observability. */
  readonly evaluatorName: string;
  readonly selectorPath: string;
  /** Every selector path the control reads (all leaves), to mask what it looked at. */
  readonly selectorPaths: readonly string[];
  /** reveal_match: messages and excerpts show what was matched in full, not masked. */
  readonly revealMatch: boolean;
  /** Some leaf counts on the server (rate, budget): evaluating it needs the agent and counters. */
  readonly counts: boolean;
  /** scope.session_labels: the session must carry all of them; null when not given. */
  readonly sessionRequired: readonly string[] | null;
  /** scope.session_labels_absent: the session must carry none of them; null when not given. */
  readonly sessionAbsent: readonly string[] | null;
  /** action.session_labels: what a match adds to the session; null when not given. */
  readonly sessionAdds: readonly string[] | null;
  /** Any of the three, or a leaf counting per session: the agent's sessions must be kept. */
  readonly sessionAware: boolean;
  /**
   * This control's record for an ordinary non-match (no score, message or metadata), which
   * says the same thing every time: most of an answer is non-matches, and one frozen
   * record per control saves an allocation per control and step and lets the server reuse
   * its JSON text.
   */
  readonly plainNonMatch: ControlMatch;
  /** The same non-match when the control's selector found nothing to look at (frozen too). */
  readonly missingNonMatch: ControlMatch;
}
