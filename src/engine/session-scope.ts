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
 * The session scope of one candidate list, resolved once per combination of labels: a
 * list's identity is what later stages memoise on (scan-groups.ts builds a list's scan
 * groups after HOT_AFTER evaluations of that same array), so a list filtered afresh on
 * every step would never be scanned in one pass and would run each control on its own.
 */
interface ScopeMemo {
  /** The labels the candidates' session scopes name, in a fixed order: bit i stands for labels[i]. */
  readonly labels: readonly string[];
  /** The candidates that apply, by the bits of the labels the session carries. */
  readonly lists: Map<number, readonly CompiledControl[]>;
}

/** Null: no candidate has a session scope (every one always applies). */
const memos = new WeakMap<readonly CompiledControl[], ScopeMemo | null>();

/** Labels a list's session scopes may name and still be memoised (bits of a small integer). */
const MAX_MEMO_LABELS = 30;
/** Combinations memoised per list; beyond, a step's list is filtered afresh (correct, only slower). */
const MAX_MEMO_LISTS = 256;

/**
 * The candidates whose session scope holds: all of `session_labels` carried, none of
 * `session_labels_absent`. A step without a session carries no labels. Returns the list
 * itself when every candidate applies, and the same array for the same labels every time.
 */
export function inSessionScope(candidates: readonly CompiledControl[], labels: ReadonlySet<string> = NO_LABELS): readonly CompiledControl[] {
  let memo = memos.get(candidates);
  if (memo === undefined) {
    memo = memoOf(candidates);
    memos.set(candidates, memo);
  }
  if (memo === null) return candidates;
  if (memo.labels.length > MAX_MEMO_LABELS) return filterInScope(candidates, labels);
  let bits = 0;
  for (let i = 0; i < memo.labels.length; i++) if (labels.has(memo.labels[i]!)) bits |= 1 << i;
  let list = memo.lists.get(bits);
  if (list === undefined) {
    list = filterInScope(candidates, labels);
    if (memo.lists.size < MAX_MEMO_LISTS) memo.lists.set(bits, list);
  }
  return list;
}

function memoOf(candidates: readonly CompiledControl[]): ScopeMemo | null {
  const labels = new Set<string>();
  for (const c of candidates) for (const label of [...(c.sessionRequired ?? []), ...(c.sessionAbsent ?? [])]) labels.add(label);
  return labels.size === 0 ? null : { labels: [...labels], lists: new Map() };
}

/** The filter itself; returns `candidates` when every one applies (allocates nothing then). */
function filterInScope(candidates: readonly CompiledControl[], labels: ReadonlySet<string>): readonly CompiledControl[] {
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
 * Runs on every step of a session: a step whose matches add nothing (most steps) copies
 * no list and no label set.
 */
export function sessionOutcome(result: EvaluationResult, set: CompiledControlSet, session: StepSession): SessionOutcome {
  let labels: Set<string> | null = null;
  const added: AddedLabel[] = [];
  const annotate = (m: ControlMatch, adds: boolean): ControlMatch => {
    const c = adderOf(set, m.control_id);
    if (c === null) return m;
    if (adds) {
      for (const label of c.sessionAdds!) {
        if (session.labels.has(label) || labels?.has(label) === true) continue;
        (labels ??= new Set(session.labels)).add(label);
        added.push({ label, control_id: c.control_id, control_name: c.name });
      }
    }
    return { ...m, session_labels_added: [...c.sessionAdds!] };
  };
  const matches = annotated(result.matches, (m) => annotate(m, true));
  const shadowMatches = annotated(result.shadow_matches, (m) => annotate(m, false));
  // Field by field, in the order of the engine's results: a spread with the session added
  // gave every answer a map of its own kind, and the server's reads of it went megamorphic.
  const out: EvaluationResult = {
    is_safe: result.is_safe,
    decision: result.decision,
    confidence: result.confidence,
    steering_context: result.steering_context,
    matches,
    errors: result.errors,
    non_matches: result.non_matches,
    shadow_matches: shadowMatches,
    session: { id: session.id, labels: sortedLabels(labels ?? session.labels) },
  };
  if (result.approval !== undefined) out.approval = result.approval;
  return { result: out, added };
}

/** The list with each entry passed through `annotate`; the list itself when none changed. */
function annotated(list: ControlMatch[], annotate: (m: ControlMatch) => ControlMatch): ControlMatch[] {
  let out: ControlMatch[] | null = null;
  for (let i = 0; i < list.length; i++) {
    const m = list[i]!;
    const a = annotate(m);
    if (a !== m && out === null) out = list.slice(0, i);
    if (out !== null) out.push(a);
  }
  return out ?? list;
}

function sortedLabels(labels: ReadonlySet<string>): string[] {
  return labels.size === 0 ? [] : [...labels].sort();
}

function adderOf(set: CompiledControlSet, controlId: number): CompiledControl | null {
  for (const c of set.controls) if (c.control_id === controlId) return c.sessionAdds !== null ? c : null;
  return null;
}
