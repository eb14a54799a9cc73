/**
 * Sessions in the engine (docs/sessions.md), kept beside the evaluation loop: which
 * candidates a session's labels let apply, and what a step's matches add to it. The
 * engine holds no session state: the caller passes the labels the session had before
 * the step and stores the labels this step added.
 */
import type { ControlMatch, EvaluationResult } from '../model/index.js';
import type { StepSession } from './api.js';
import type { CompiledControl } from './build-control.js';
import type { CompiledControlSet } from './compile.js';

const NO_LABELS: ReadonlySet<string> = new Set();

/**
 * The candidates whose session scope holds: all of `session_labels` carried, none of
 * `session_labels_absent`. A step without a session carries no labels. Returns the list
 * itself when every candidate applies (the common case allocates nothing).
 */
export function inSessionScope(candidates: readonly CompiledControl[], labels: ReadonlySet<string> = NO_LABELS): readonly CompiledControl[] {
  let out: CompiledControl[] | null = null;
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i]!;
    const applies = sessionScopeHolds(c, labels);
    if (!applies && out === null) out = candidates.slice(0, i);
    else if (applies && out !== null) out.push(c);
  }
  return out ?? candidates;
}

function sessionScopeHolds(c: CompiledControl, labels: ReadonlySet<string>): boolean {
  if (c.sessionRequired !== null) {
    for (const label of c.sessionRequired) if (!labels.has(label)) return false;
  }
  if (c.sessionAbsent !== null) {
    for (const label of c.sessionAbsent) if (labels.has(label)) return false;
  }
  return true;
}

/** A label a step's match added, with the control that added it. */
export interface AddedLabel {
  readonly label: string;
  readonly control_id: number;
  readonly control_name: string;
}

export interface SessionOutcome {
  /** The result with `session` and each adding match's `session_labels_added`. */
  readonly result: EvaluationResult;
  /** Labels new to the session, first adder first: what the caller stores. */
  readonly added: readonly AddedLabel[];
}

/**
 * What the step's matches add to its session. Every match of an enforced control with
 * `action.session_labels` adds them (a fail-closed error counts as a match, as in the
 * decision); a shadow match names the labels it would add and adds none. Labels apply
 * from the session's next step: the decision of this step was made without them.
 */
export function sessionOutcome(result: EvaluationResult, set: CompiledControlSet, session: StepSession): SessionOutcome {
  const labels = new Set(session.labels);
  const added: AddedLabel[] = [];
  const annotate = (m: ControlMatch, adds: boolean): ControlMatch => {
    const c = adderOf(set, m.control_id);
    if (c === null) return m;
    if (adds) {
      for (const label of c.sessionAdds!) {
        if (labels.has(label)) continue;
        labels.add(label);
        added.push({ label, control_id: c.control_id, control_name: c.name });
      }
    }
    return { ...m, session_labels_added: [...c.sessionAdds!] };
  };
  const matches = result.matches.map((m) => annotate(m, true));
  const shadowMatches = result.shadow_matches.map((m) => annotate(m, false));
  return {
    result: { ...result, matches, shadow_matches: shadowMatches, session: { id: session.id, labels: [...labels].sort() } },
    added,
  };
}

function adderOf(set: CompiledControlSet, controlId: number): CompiledControl | null {
  for (const c of set.controls) if (c.control_id === controlId) return c.sessionAdds !== null ? c : null;
  return null;
}
