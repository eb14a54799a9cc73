/**
 * Compiles an agent's controls once, when they change: patterns built, scopes resolved,
 * controls indexed by stage x step type so that evaluating a step loops only over the
 * controls that can apply. The result is frozen and shared by concurrent evaluations.
 */
import type { FieldIssue, Stage, StepType } from '../model/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ControlInput } from './api.js';
import { buildControl, type CompiledControl } from './build-control.js';
import { controlKey, type CompileCache } from './compile-cache.js';

export interface SkippedControl {
  control_id: number;
  name: string;
  issues: FieldIssue[];
}

export interface CompiledControlSet {
  /** Enabled, compiled controls in input order. */
  readonly controls: readonly CompiledControl[];
  /** Candidates per stage and step type, in control order. */
  readonly index: Readonly<Record<Stage, Readonly<Record<StepType, readonly CompiledControl[]>>>>;
  /**
   * Memo of candidates per stage, step type and step name, scope fully applied (names and
   * step_name_regex). Filled by evaluation; the only mutable part of a set, and bounded.
   */
  readonly byName: Readonly<Record<Stage, Readonly<Record<StepType, Map<string, readonly CompiledControl[]>>>>>;
  /** Controls that failed to compile (their configs were valid once; an evaluator may have gone). */
  readonly skipped: readonly SkippedControl[];
  /** Controls left out because they are disabled or have no data. */
  readonly inactive: number;
  /** Ids of the `mode: shadow` controls; null when there are none (the common case). */
  readonly shadowIds: ReadonlySet<number> | null;
  /** The store revision the controls were read at (CompileOptions.revision); null when not known. */
  readonly revision: number | null;
  /**
   * Some control counts on the server (rate, budget): evaluate with `agentName` and
   * `counters` (EvaluateOptions). False for most sets, whose evaluation needs neither.
   */
  readonly counting: boolean;
  /**
   * Some control is session-aware (session labels in scope or action, or the repeat
   * evaluator): evaluate with `session` (EvaluateOptions) when the step has one.
   */
  readonly sessions: boolean;
  /**
   * The ids of the controls that ask a person (shadows aside); null when none does. With
   * `counting`, a step submitted again on its approval is counted once, and an asking
   * budget is spent by the step a person approved over it (docs/approvals.md).
   */
  readonly askingIds: ReadonlySet<number> | null;
}

export interface CompileOptions {
  /**
   * Shares compiled controls and their parts with every other set compiled through the
   * same cache: a control linked to many agents is compiled once (see CompileCache).
   */
  cache?: CompileCache;
  /** The store revision the controls were read at, carried on the set for events (`set_revision`). */
  revision?: number | null;
}

export function compileControls(
  controls: readonly ControlInput[],
  registry: EvaluatorRegistry,
  options: CompileOptions = {},
): CompiledControlSet {
  const { cache } = options;
  const compiled: CompiledControl[] = [];
  const skipped: SkippedControl[] = [];
  let inactive = 0;
  for (const input of controls) {
    if (input.data === null || input.data.enabled === false) {
      inactive++;
      continue;
    }
    const key = cache ? controlKey(input) : undefined;
    const shared = key !== undefined ? cache?.controls.find(key) : undefined;
    if (shared) {
      compiled.push(shared);
      continue;
    }
    let built;
    try {
      built = buildControl(input.control_id, input.name, input.data, registry, cache);
    } catch (err) {
      // Data that bypassed validation (wrong shape) must not take the whole set down.
      const message = err instanceof Error ? err.message : String(err);
      built = { ok: false as const, issues: [{ field: '', code: 'invalid_control', message }] };
    }
    if (built.ok) compiled.push(cache && key !== undefined ? cache.controls.keep(key, built.control) : built.control);
    else skipped.push({ control_id: input.control_id, name: input.name, issues: built.issues });
  }

  return freezeSet(compiled, skipped, inactive, options.revision ?? null);
}

const NO_CONTROLS: readonly CompiledControl[] = Object.freeze([]);

/** One entry per step type, so that a new type is indexed like the others. */
function perStepType<T>(make: (type: StepType) => T): Readonly<Record<StepType, T>> {
  return Object.freeze({ tool: make('tool'), llm: make('llm'), resource: make('resource'), prompt: make('prompt') });
}

function freezeSet(compiled: CompiledControl[], skipped: SkippedControl[], inactive: number, revision: number | null): CompiledControlSet {
  // Arrays grown by push or filter keep spare capacity (17 slots at first); a set lives
  // as long as its agent's controls do not change, so it keeps exact-size copies.
  const exact = <T>(list: T[]): readonly T[] => Object.freeze(list.slice());
  const shadow = compiled.filter((c) => c.shadow);
  const bucket = (stage: Stage, type: StepType) => {
    const list = compiled.filter((c) => c.stages.includes(stage) && c.stepTypes.includes(type));
    return list.length === 0 ? NO_CONTROLS : exact(list);
  };
  return Object.freeze({
    controls: compiled.length === 0 ? NO_CONTROLS : exact(compiled),
    index: Object.freeze({ pre: perStepType((type) => bucket('pre', type)), post: perStepType((type) => bucket('post', type)) }),
    byName: Object.freeze({ pre: perStepType(() => new Map()), post: perStepType(() => new Map()) }),
    skipped: skipped.length === 0 ? NO_SKIPPED : exact(skipped),
    inactive,
    shadowIds: idsOrNull(shadow),
    revision,
    counting: compiled.some((c) => c.counts),
    sessions: compiled.some((c) => c.sessionAware),
    askingIds: idsOrNull(compiled.filter((c) => c.decision === 'ask' && !c.shadow)),
  });
}

const NO_SKIPPED: readonly SkippedControl[] = Object.freeze([]);

function idsOrNull(controls: readonly CompiledControl[]): ReadonlySet<number> | null {
  return controls.length === 0 ? null : new Set(controls.map((c) => c.control_id));
}

/** An empty set, for agents without controls. */
export const EMPTY_CONTROL_SET: CompiledControlSet = freezeSet([], [], 0, null);
