/**
 * Turns validated control data into its compiled parts: the one place where evaluator
 * configs, selector paths and step_name_regex are checked beyond the zod schema. Both
 * validation (on save) and compilation (when the control set changes) go through here,
 * so a control that validates also compiles.
 */
import {
  approvalTimeoutMs,
  conditionDepth,
  MAX_CONDITION_DEPTH,
  type Condition,
  type ControlData,
  type ControlMatch,
  type ControlResult,
  type FieldIssue,
  type OnError,
  type Stage,
  STEP_TYPES,
  type StepType,
} from '../model/index.js';
import { compilePattern, type CompiledPattern } from '../evaluators/regex/re2.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import { parseSelector } from './select.js';
import { stepNamesKey, type CompileCache } from './compile-cache.js';
import { NodeKind, type CompiledControl, type CompiledLeaf, type CompiledNode } from './compiled.js';

export { NodeKind, type CompiledControl, type CompiledLeaf, type CompiledNode } from './compiled.js';

const PLAIN_NON_MATCH: ControlResult = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });

/**
 * Serial numbers of the records built once per compiled control (its non-matches). They
 * are frozen and never changed, so an answer made only of them reads the same every time:
 * server/result-json.ts keys the bytes of such answers by these numbers.
 */
const constantRecordIds = new WeakMap<ControlMatch, number>();
let lastRecordId = 0;

/** Freezes a record the engine answers with unchanged for every step, and numbers it. */
export function constantRecord<T extends ControlMatch>(record: T): Readonly<T> {
  Object.freeze(record.result);
  const frozen = Object.freeze(record);
  constantRecordIds.set(frozen, ++lastRecordId);
  return frozen;
}

/** The record's serial number when it is one of the engine's constant records, else undefined. */
export function constantRecordId(record: ControlMatch): number | undefined {
  return constantRecordIds.get(record);
}

export type BuildResult = { ok: true; control: CompiledControl } | { ok: false; issues: FieldIssue[] };

/**
 * Deny and steer controls fail closed by default; so do ask controls (a failed check asks
 * the person rather than letting the step through), and controls that add session labels:
 * a deny may need the label, and a failed check that added none would let through the
 * step it exists to stop (docs/sessions.md). The others fail open (PRODUCT.md).
 */
export function defaultOnError(decision: ControlData['action']['decision'], addsLabels = false): OnError {
  return decision === 'deny' || decision === 'steer' || decision === 'ask' || addsLabels ? 'deny' : 'allow';
}

/**
 * With `parts`, the control shares what it can with the other controls compiled through
 * the same cache (step-name sets, selectors, regex programs).
 */
export function buildControl(
  control_id: number,
  name: string,
  data: ControlData,
  registry: EvaluatorRegistry,
  parts?: CompileCache,
): BuildResult {
  const issues: FieldIssue[] = [];
  const scope = data.scope ?? {};
  const reveal = data.reveal_match === true;

  let nameRegex: CompiledPattern | null = null;
  if (scope.step_name_regex !== undefined) {
    const pattern = scope.step_name_regex;
    const re = parts?.stepNameRegexes.find(pattern) ?? compilePattern(pattern);
    if (typeof re === 'string') issues.push({ field: 'scope.step_name_regex', code: 'invalid_regex', message: re });
    else nameRegex = parts ? parts.stepNameRegexes.keep(pattern, re) : re;
  }

  let node: CompiledNode | null = null;
  if (data.condition !== undefined) {
    const depth = conditionDepth(data.condition);
    if (depth > MAX_CONDITION_DEPTH) {
      issues.push({
        field: 'condition',
        code: 'too_deep',
        message: `condition is nested ${depth} levels deep; the limit is ${MAX_CONDITION_DEPTH}`,
      });
    } else {
      node = buildNode(data.condition, 'condition', reveal, registry, issues, parts, control_id);
    }
  } else if (data.selector && data.evaluator) {
    node = buildLeaf(data.selector.path, data.evaluator.name, data.evaluator.config ?? {}, '', reveal, registry, issues, parts, control_id);
  } else {
    issues.push({ field: 'selector', code: 'invalid_type', message: 'a control needs selector+evaluator or a condition' });
  }

  if (issues.length > 0 || node === null) return { ok: false, issues };
  if (data.execution === 'sdk') {
    const sessionField = data.action.session_labels !== undefined ? 'action.session_labels' : data.scope?.session_labels !== undefined ? 'scope.session_labels' : data.scope?.session_labels_absent !== undefined ? 'scope.session_labels_absent' : null;
    if (sessionField !== null) {
      return { ok: false, issues: [{ field: 'execution', code: 'invalid_value', message: `${sessionField}: session labels are server state; an agent process cannot see the session's other steps, so this control cannot run with execution: sdk; use execution: server` }] };
    }
    const stateful = leavesOf(node).find((leaf) => leaf.stateful !== undefined);
    if (stateful !== undefined) {
      return {
        ok: false,
        issues: [{ field: 'execution', code: 'invalid_value', message: `the ${stateful.evaluatorName} evaluator ${stateful.stateful}; use execution: server` }],
      };
    }
  }

  const fallback = defaultOnError(data.action.decision, data.action.session_labels !== undefined);
  // A flat control's only leaf decides its on_error; merging it here saves a lookup per step.
  const onError = node.kind === NodeKind.Leaf ? (node.onError ?? fallback) : fallback;
  const first = firstLeaf(node);
  const decision = data.action.decision;
  const control: CompiledControl = Object.freeze({
    control_id,
    name,
    decision,
    steering_context: data.action.steering_context ?? null,
    actionMessage: data.action.message ?? null,
    approvalTimeoutMs: decision === 'ask' ? approvalTimeoutMs(data.action.approval) : null,
    shadow: data.mode === 'shadow',
    execution: data.execution ?? 'server',
    stages: scope.stages ? stagesOf(scope.stages) : BOTH_STAGES,
    stepTypes: scope.step_types ? stepTypesOf(scope.step_types) : ALL_STEP_TYPES,
    stepNames: scope.step_names ? stepNamesOf(scope.step_names, parts) : null,
    nameRegex,
    node,
    onError,
    evaluatorName: first.evaluatorName,
    selectorPath: first.selector.path,
    selectorPaths: Object.freeze([...new Set(leavesOf(node).map((leaf) => leaf.selector.path))]),
    revealMatch: reveal,
    counts: leavesOf(node).some((leaf) => leaf.stateful !== undefined),
    ...sessionPartsOf(data, node),
    plainNonMatch: constantRecord({ control_id, control_name: name, action: decision, result: PLAIN_NON_MATCH }),
    // A control whose every selector is declared optional finds nothing by design, never "missing".
    missingNonMatch: allSelectorsOptional(data)
      ? constantRecord({ control_id, control_name: name, action: decision, result: PLAIN_NON_MATCH })
      : constantRecord({ control_id, control_name: name, action: decision, result: PLAIN_NON_MATCH, selector_missing: true as const }),
  });
  return { ok: true, control };
}

function buildNode(
  cond: Condition,
  at: string,
  reveal: boolean,
  registry: EvaluatorRegistry,
  issues: FieldIssue[],
  parts: CompileCache | undefined,
  controlId: number,
): CompiledNode | null {
  if ('and' in cond || 'or' in cond) {
    const isAnd = 'and' in cond;
    const list = isAnd ? cond.and : cond.or;
    const key = isAnd ? 'and' : 'or';
    if (list.length === 0) {
      issues.push({ field: `${at}.${key}`, code: 'too_small', message: `${key} needs at least one condition` });
      return null;
    }
    const children = list.map((c, i) => buildNode(c, `${at}.${key}[${i}]`, reveal, registry, issues, parts, controlId));
    if (children.some((c) => c === null)) return null;
    return Object.freeze({
      kind: isAnd ? NodeKind.And : NodeKind.Or,
      children: Object.freeze(children as CompiledNode[]),
    });
  }
  if ('not' in cond) {
    const child = buildNode(cond.not, `${at}.not`, reveal, registry, issues, parts, controlId);
    return child === null ? null : Object.freeze({ kind: NodeKind.Not, child });
  }
  return buildLeaf(cond.selector.path, cond.evaluator.name, cond.evaluator.config ?? {}, `${at}.`, reveal, registry, issues, parts, controlId);
}

function buildLeaf(
  path: string,
  evaluatorName: string,
  config: unknown,
  prefix: string,
  reveal: boolean,
  registry: EvaluatorRegistry,
  issues: FieldIssue[],
  parts: CompileCache | undefined,
  controlId: number,
): CompiledLeaf | null {
  let selector = parts?.selectors.find(path) ?? parseSelector(path);
  if (typeof selector === 'string') {
    issues.push({ field: `${prefix}selector.path`, code: 'invalid_path', message: selector });
  } else if (parts) {
    selector = parts.selectors.keep(path, selector);
  }
  const compiled = registry.compile(evaluatorName, config, `${prefix}evaluator`, parts, controlId, path);
  if (!compiled.ok) issues.push(...compiled.issues);
  if (typeof selector === 'string' || !compiled.ok) return null;
  return Object.freeze({
    kind: NodeKind.Leaf,
    selector,
    check: compiled.compiled.check,
    evaluatorName,
    onError: compiled.compiled.onError,
    reveal,
    ...(compiled.compiled.stateful === undefined ? {} : { stateful: compiled.compiled.stateful }),
    ...(compiled.compiled.perSession ? { perSession: true as const } : {}),
  });
}

// Scope lists only answer "is this stage (step type) in scope?", so every control holds
// one of these shared arrays rather than its own copy.
const ONLY_PRE = Object.freeze(['pre'] as const);
const ONLY_POST = Object.freeze(['post'] as const);
const BOTH_STAGES = Object.freeze(['pre', 'post'] as const);
const ALL_STEP_TYPES = Object.freeze([...STEP_TYPES]);
const ONE_STEP_TYPE: Readonly<Record<StepType, readonly StepType[]>> = Object.freeze(
  Object.fromEntries(STEP_TYPES.map((type) => [type, Object.freeze([type])])) as Record<StepType, readonly StepType[]>,
);

/** The schema makes these lists non-empty. */
function stagesOf(stages: readonly Stage[]): readonly Stage[] {
  const pre = stages.includes('pre');
  const post = stages.includes('post');
  return pre && post ? BOTH_STAGES : pre ? ONLY_PRE : ONLY_POST;
}

function stepTypesOf(types: readonly StepType[]): readonly StepType[] {
  const distinct = STEP_TYPES.filter((type) => types.includes(type));
  if (distinct.length === STEP_TYPES.length) return ALL_STEP_TYPES;
  return distinct.length === 1 ? ONE_STEP_TYPE[distinct[0]!] : Object.freeze(distinct);
}

function stepNamesOf(names: readonly string[], parts: CompileCache | undefined): ReadonlySet<string> {
  if (!parts) return new Set(names);
  const key = stepNamesKey(names);
  return parts.stepNames.find(key) ?? parts.stepNames.keep(key, new Set(names));
}

/** The control's session fields, compiled (docs/sessions.md). */
function sessionPartsOf(data: ControlData, node: CompiledNode) {
  const list = (labels: readonly string[] | undefined) => (labels === undefined ? null : Object.freeze([...labels]));
  const sessionRequired = list(data.scope?.session_labels);
  const sessionAbsent = list(data.scope?.session_labels_absent);
  const sessionAdds = list(data.action.session_labels);
  const perSession = leavesOf(node).some((leaf) => leaf.perSession === true);
  return { sessionRequired, sessionAbsent, sessionAdds, sessionAware: perSession || sessionRequired !== null || sessionAbsent !== null || sessionAdds !== null };
}

function leavesOf(node: CompiledNode): CompiledLeaf[] {
  switch (node.kind) {
    case NodeKind.Leaf:
      return [node];
    case NodeKind.Not:
      return leavesOf(node.child);
    case NodeKind.And:
    case NodeKind.Or:
      return node.children.flatMap(leavesOf);
  }
}

function firstLeaf(node: CompiledNode): CompiledLeaf {
  switch (node.kind) {
    case NodeKind.Leaf:
      return node;
    case NodeKind.Not:
      return firstLeaf(node.child);
    case NodeKind.And:
    case NodeKind.Or:
      return firstLeaf(node.children[0]!);
  }
}

/** True when every selector of the control (its own, or each leaf of its condition) says `optional: true`. */
function allSelectorsOptional(data: ControlData): boolean {
  const optional: boolean[] = [];
  const walk = (cond: Condition): void => {
    if ('and' in cond) cond.and.forEach(walk);
    else if ('or' in cond) cond.or.forEach(walk);
    else if ('not' in cond) walk(cond.not);
    else optional.push(cond.selector.optional === true);
  };
  if (data.condition) walk(data.condition);
  else if (data.selector) optional.push(data.selector.optional === true);
  return optional.length > 0 && optional.every(Boolean);
}
