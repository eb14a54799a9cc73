/**
 * Evaluates one step at one stage against a compiled control set. Pure and synchronous
 * unless an evaluator answers with a promise: the result is then a promise too, so the
 * common all-synchronous case never waits for a microtask.
 */
import type { ControlMatch, ControlResult, EvaluationResult, Stage, Step } from '../model/index.js';
import type { OnError } from '../model/index.js';
import type { EvaluatorOutcome, ValueMemo } from '../evaluators/types.js';
import { textOf } from '../evaluators/text.js';
import { maskSensitiveIn } from '../evaluators/mask-sensitive.js';
import type { ControlExecution, EvaluateOptions, EvaluationOutcome } from './api.js';
import { NodeKind, type CompiledControl, type CompiledNode } from './build-control.js';
import { evalNode, isPlain, isThenable, LeafFailure, messageOf, NOTHING, type Pending, type Verdict } from './conditions.js';
import type { CompiledControlSet } from './compile.js';
import { CLEARED_MISSING, clearedByScan, NOT_CLEARED, scanGroupsOf, type Clock } from './scan-groups.js';
import { countsAsMissing, selectValue, StepView, type CompiledSelector } from './select.js';
import { presentOutcome, StepExcerpts } from './present.js';
import { inSessionScope } from './session-scope.js';
// The global `performance` is a lazy getter in Node: reading it on every clock read costs.
import { performance } from 'node:perf_hooks';

/**
 * HOT_ARRAYS: arrays read on every step (candidate lists, scan groups, selector segments,
 * prefilter literals) are readonly by type but not frozen. V8 as in Node 20 does not
 * inline element loads from a frozen array into optimised code: every read goes through
 * an inline-cache call, about four times the cost of a plain array's (measured:
 * 37 ns against 8 ns to sum ten elements), several hundred instructions per evaluation.
 */
const NO_CANDIDATES: readonly CompiledControl[] = [];

export function evaluateStep(
  set: CompiledControlSet,
  step: Step,
  stage: Stage,
  options?: EvaluateOptions,
): Pending<EvaluationOutcome> {
  // Session scope (session-scope.ts) is applied per step, after the per-name memo.
  const candidates = set.sessions ? inSessionScope(candidatesOf(set, stage, step), options?.session?.labels) : candidatesOf(set, stage, step);
  const only = options?.execution;
  const view = new StepView(step, stage, options?.agentName, options?.counters, options?.session?.id);
  const records: Array<Pending<ControlMatch>> = [];
  let waiting = false;
  // Regex controls of one field scanned together (scan-groups.ts); 1 = known non-match.
  const groups = scanGroupsOf(candidates);

  // One loop serves both callers: with collectExecutions each control is also timed and
  // described (`detail`), else `detail` is null and the loop only evaluates.
  const detail: Detail | null =
    options?.collectExecutions === true ? { last: performance.now(), excerpts: options.excerpts !== false ? new StepExcerpts() : null } : null;
  const executions: ControlExecution[] | null = detail !== null ? [] : null;
  // A control a scan ruled out is timed as its share of the scan; clearedByScan sets the
  // share of every control it rules out, and only those are read. A plain array, unfilled:
  // a typed array would be allocated with malloc, and fill() runs in V8's runtime.
  const shares: number[] | null = detail !== null && groups ? new Array<number>(candidates.length) : null;
  const cleared = groups ? clearedByScan(groups, candidates.length, view, shares !== null ? { shares, clock: detail! } : undefined) : null;
  for (let i = 0; i < candidates.length; i++) {
    const c = candidates[i]!;
    if (only !== undefined && c.execution !== only) continue;
    if (cleared !== null && cleared[i] !== NOT_CLEARED) {
      const m = cleared[i] === CLEARED_MISSING ? c.missingNonMatch : c.plainNonMatch;
      if (executions !== null) executions[records.length] = executionOf(c, m, undefined, shares![i]!, detail!.excerpts);
      records.push(m);
      continue;
    }
    const r = executions !== null ? runDetailed(c, view, executions, records.length, detail!) : runControl(c, view);
    if (isThenable(r)) waiting = true;
    records.push(r);
  }
  // Excerpts are made once every control has run: each masks what any of them found.
  if (!waiting) {
    detail?.excerpts?.finish();
    return { result: decide(records as ControlMatch[], set.shadowIds), executions };
  }
  return Promise.all(records.map(settled)).then((done) => {
    detail?.excerpts?.finish();
    return { result: decide(done, set.shadowIds), executions };
  });
}

/** Agents have few step names, so scope is resolved once per name, not per step. */
const MAX_MEMO_NAMES = 4096;

function candidatesOf(set: CompiledControlSet, stage: Stage, step: Step): readonly CompiledControl[] {
  const memo = set.byName[stage]?.[step.type];
  if (memo === undefined) return NO_CANDIDATES;
  const name = step.name;
  let list = memo.get(name);
  if (list === undefined) {
    list = set.index[stage][step.type].filter((c) => inScope(c, name));
    // Beyond the bound (names made up per call), scope is resolved each time instead.
    if (memo.size < MAX_MEMO_NAMES) memo.set(name, list);
  }
  return list;
}

/** Scope by step name: step_names OR step_name_regex; neither given means every name. */
function inScope(c: CompiledControl, name: string): boolean {
  if (c.stepNames === null && c.nameRegex === null) return true;
  return (c.stepNames !== null && c.stepNames.has(name)) || (c.nameRegex !== null && c.nameRegex.test(name));
}

/** The fast path: no excerpt, no clock. */
function runControl(c: CompiledControl, view: StepView): Pending<ControlMatch> {
  const node = c.node;
  if (node.kind === NodeKind.Leaf) {
    const value = selectValue(node.selector, view);
    // An evaluator given nothing does not match (and is not asked).
    if (value === undefined) return nothingSelected(c, node.selector, view);
    let out: Pending<EvaluatorOutcome>;
    try {
      out = node.check(value, view.memo, view);
    } catch (err) {
      return errorOf(c, c.onError, err);
    }
    if (isThenable(out)) {
      return out.then(
        (o) => matchOf(c, o, value, view.memo),
        (err: unknown) => errorOf(c, c.onError, err),
      );
    }
    return matchOf(c, out, value, view.memo);
  }
  const v = runTree(c, view);
  return isThenable(v) ? v.then((d) => d.match) : v.match;
}

interface Detailed {
  match: ControlMatch;
  value: unknown;
  /** What the evaluators reported finding, for the excerpt. */
  found?: readonly string[] | null | undefined;
}

function runTree(c: CompiledControl, view: StepView): Pending<Detailed> {
  let v: Pending<Verdict>;
  try {
    v = evalNode(c.node, view);
  } catch (err) {
    return { match: errorOf(c, onErrorOf(c, err), err), value: undefined };
  }
  // Tree outcomes are made of leaf outcomes already presented (evalLeaf).
  if (isThenable(v)) {
    return v.then(
      (d) => ({ match: treeMatchOf(c, d.outcome, d.value, view), value: d.value, found: d.outcome.found }),
      (err: unknown) => ({ match: errorOf(c, onErrorOf(c, err), err), value: undefined }),
    );
  }
  return { match: treeMatchOf(c, v.outcome, v.value, view), value: v.value, found: v.outcome.found };
}

/** The non-match of a control whose selector found nothing: marked missing unless that is by design. */
function nothingSelected(c: CompiledControl, selector: CompiledSelector, view: StepView): ControlMatch {
  return countsAsMissing(selector, view) ? c.missingNonMatch : c.plainNonMatch;
}

/**
 * A condition tree's match. A tree that did not match is missing its fields only when not
 * one of its leaves found anything: a leaf that finds nothing in one branch is how `or`
 * trees cover tools with different arguments.
 */
function treeMatchOf(c: CompiledControl, o: EvaluatorOutcome, value: unknown, view: StepView): ControlMatch {
  const m = matchOf(c, o, value, null);
  return m === c.plainNonMatch && selectsNothing(c.node, view) ? c.missingNonMatch : m;
}

function selectsNothing(node: CompiledNode, view: StepView): boolean {
  switch (node.kind) {
    case NodeKind.Leaf:
      return selectValue(node.selector, view) === undefined && countsAsMissing(node.selector, view);
    case NodeKind.Not:
      return selectsNothing(node.child, view);
    case NodeKind.And:
    case NodeKind.Or:
      return node.children.every((child) => selectsNothing(child, view));
  }
}

/** The observability path: also the selected value's excerpt and the time taken. */
function runDetailed(
  c: CompiledControl,
  view: StepView,
  executions: ControlExecution[],
  slot: number,
  clock: Detail,
): Pending<ControlMatch> {
  const start = clock.last;
  const node = c.node;
  let d: Pending<Detailed>;
  if (node.kind === NodeKind.Leaf) {
    // A synchronous leaf (the common case) allocates only its match and its execution.
    let value: unknown;
    let out: Pending<EvaluatorOutcome> = NOTHING;
    try {
      value = selectValue(node.selector, view);
      if (value !== undefined) out = node.check(value, view.memo, view);
    } catch (err) {
      return finishDetailed(c, errorOf(c, c.onError, err), undefined, executions, slot, start, clock);
    }
    if (value === undefined) return finishDetailed(c, nothingSelected(c, node.selector, view), value, executions, slot, start, clock);
    if (!isThenable(out)) return finishDetailed(c, matchOf(c, out, value, view.memo), value, executions, slot, start, clock, out.found);
    d = out.then(
      (o) => ({ match: matchOf(c, o, value, view.memo), value, found: o.found }),
      (err: unknown) => ({ match: errorOf(c, c.onError, err), value: undefined }),
    );
  } else {
    d = runTree(c, view);
  }
  if (isThenable(d)) {
    // Timed until it settles; the next control starts now, not when this one ends.
    clock.last = performance.now();
    return d.then((done) => {
      executions[slot] = executionOf(c, done.match, done.value, performance.now() - start, clock.excerpts, done.found);
      return done.match;
    });
  }
  return finishDetailed(c, d.match, d.value, executions, slot, start, clock, d.found);
}

function finishDetailed(
  c: CompiledControl,
  match: ControlMatch,
  value: unknown,
  executions: ControlExecution[],
  slot: number,
  start: number,
  clock: Detail,
  found?: readonly string[] | null,
): ControlMatch {
  const end = performance.now();
  clock.last = end;
  executions[slot] = executionOf(c, match, value, end - start, clock.excerpts, found);
  return match;
}

/** What the observability path keeps while it runs the controls of one step. */
interface Detail extends Clock {
  /** EvaluateOptions.excerpts: the excerpts of the step's matches, made when all have run; null when not asked for. */
  readonly excerpts: StepExcerpts | null;
}

function executionOf(
  c: CompiledControl,
  m: ControlMatch,
  value: unknown,
  duration: number,
  excerpts: StepExcerpts | null,
  found?: readonly string[] | null,
): ControlExecution {
  const text = excerpts !== null && m.result.matched ? textOf(value) : undefined;
  const x: ControlExecution = {
    control_id: c.control_id,
    control_name: c.name,
    action: c.decision,
    matched: m.result.matched,
    confidence: m.result.confidence,
    error_message: m.error ?? null,
    evaluator_name: c.evaluatorName,
    selector_path: c.selectorPath,
    selector_paths: c.selectorPaths,
    duration_ms: duration,
    mode: c.shadow ? 'shadow' : 'enforce',
    message: m.result.message,
    // Left unset when not asked for: readers then show the selected value masked whole.
    excerpt: excerpts !== null ? null : undefined,
    selector_missing: m.selector_missing === true,
  };
  if (text !== undefined) excerpts!.add(x, text, found, c.revealMatch);
  return x;
}

function onErrorOf(c: CompiledControl, err: unknown): OnError {
  return (err instanceof LeafFailure ? err.onError : undefined) ?? c.onError;
}

function resultOf(o: EvaluatorOutcome): ControlResult {
  const conf = o.confidence;
  // Outcomes already in result shape (the built-ins' shared non-match) are used as they are;
  // one with `found` never is, so that what was found reaches the answer only as presented.
  if (o.found === undefined && o.message !== undefined && o.metadata !== undefined && conf >= 0 && conf <= 1 && typeof o.matched === 'boolean') {
    return o as ControlResult;
  }
  return {
    matched: o.matched === true,
    confidence: conf >= 0 && conf <= 1 ? conf : conf > 1 ? 1 : 0,
    message: o.message ?? null,
    metadata: o.metadata ?? null,
  };
}

/**
 * `memo` is the step's memo when the outcome comes straight from an evaluator, which is
 * then presented (present.ts: what the answer may show of what it matched); null when it
 * is a condition tree's, built from leaves already presented.
 */
function matchOf(c: CompiledControl, o: EvaluatorOutcome, value: unknown, memo: ValueMemo | null): ControlMatch {
  if (isPlain(o)) return c.plainNonMatch;
  const shown = memo === null ? o : presentOutcome(o, memo.text(value), c.revealMatch);
  const m: ControlMatch = { control_id: c.control_id, control_name: c.name, action: c.decision, result: resultOf(shown) };
  if (c.steering_context !== null && m.result.matched) m.steering_context = c.steering_context;
  if (c.actionMessage !== null && m.result.matched) m.result = { ...m.result, message: c.actionMessage };
  return m;
}

/** on_error allow: reported, not matched. on_error deny: the control's action fires. */
function errorOf(c: CompiledControl, onError: OnError, err: unknown): ControlMatch {
  const cause = err instanceof LeafFailure ? err.cause : err;
  // An error may quote the value it failed on: masked like a match's message (present.ts).
  const text = c.revealMatch ? messageOf(cause) : maskSensitiveIn(messageOf(cause));
  const matched = onError === 'deny';
  const m: ControlMatch = {
    control_id: c.control_id,
    control_name: c.name,
    action: c.decision,
    result: { matched, confidence: 0, message: `evaluator error (on_error ${onError}): ${text}`, metadata: null },
    error: text,
  };
  if (matched && c.steering_context !== null) m.steering_context = c.steering_context;
  return m;
}

/**
 * SPEC section 1: deny wins, then steer, then ask (PRODUCT.md: a person approves the step;
 * the server binds the answer to an approval, server/approval-gate.ts); allow, warn and
 * log never block. Matches of
 * shadow controls (`shadowIds`) go to `shadow_matches` and take no part in the decision.
 */
function decide(records: ControlMatch[], shadowIds: ReadonlySet<number> | null): EvaluationResult {
  const matches: ControlMatch[] = [];
  const nonMatches: ControlMatch[] = [];
  const errors: ControlMatch[] = [];
  const shadowMatches: ControlMatch[] = [];
  let firstDeny: ControlMatch | null = null;
  let firstSteer: ControlMatch | null = null;
  let firstAsk: ControlMatch | null = null;
  for (let i = 0; i < records.length; i++) {
    const m = records[i]!;
    // Each control lands in exactly one list: fail-closed errors count as matches.
    if (m.result.matched) {
      if (shadowIds !== null && shadowIds.has(m.control_id)) {
        shadowMatches.push(m);
        continue;
      }
      matches.push(m);
      if (m.action === 'deny') firstDeny ??= m;
      else if (m.action === 'steer') firstSteer ??= m;
      else if (m.action === 'ask') firstAsk ??= m;
    } else if (m.error !== undefined) {
      errors.push(m);
    } else {
      nonMatches.push(m);
    }
  }
  if (firstDeny !== null) {
    return {
      is_safe: false,
      decision: 'deny',
      confidence: firstDeny.result.confidence,
      steering_context: null,
      matches,
      errors,
      non_matches: nonMatches,
      shadow_matches: shadowMatches,
    };
  }
  if (firstSteer !== null) {
    return {
      is_safe: true,
      decision: 'steer',
      confidence: firstSteer.result.confidence,
      steering_context: firstSteer.steering_context ?? null,
      matches,
      errors,
      non_matches: nonMatches,
      shadow_matches: shadowMatches,
    };
  }
  // Not safe until a person says so: the approval itself is the server's to attach.
  if (firstAsk !== null) return { is_safe: false, decision: 'ask', confidence: firstAsk.result.confidence, steering_context: null, matches, errors, non_matches: nonMatches, shadow_matches: shadowMatches };
  return { is_safe: true, decision: 'allow', confidence: 1, steering_context: null, matches, errors, non_matches: nonMatches, shadow_matches: shadowMatches };
}

/** Records as promises, for Promise.all once some evaluator went asynchronous. */
function settled(r: Pending<ControlMatch>): Promise<ControlMatch> {
  return Promise.resolve(r);
}
