/**
 * Compiles an agent's controls once, when they change: patterns built, scopes resolved,
 * controls indexed by stage x step type so that evaluating a step loops only over the
 * controls that can apply. The result is frozen and shared by concurrent evaluations.
 */
import type { FieldIssue, Stage, StepType } from '../model/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ControlInput } from './api.js';
import { buildControl, type CompiledControl } from './build-control.js';

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
}

export function compileControls(controls: readonly ControlInput[], registry: EvaluatorRegistry): CompiledControlSet {
  const compiled: CompiledControl[] = [];
  const skipped: SkippedControl[] = [];
  let inactive = 0;
  for (const input of controls) {
    if (input.data === null || input.data.enabled === false) {
      inactive++;
      continue;
    }
    let built;
    try {
      built = buildControl(input.control_id, input.name, input.data, registry);
    } catch (err) {
      // Data that bypassed validation (wrong shape) must not take the whole set down.
      const message = err instanceof Error ? err.message : String(err);
      built = { ok: false as const, issues: [{ field: '', code: 'invalid_control', message }] };
    }
    if (built.ok) compiled.push(built.control);
    else skipped.push({ control_id: input.control_id, name: input.name, issues: built.issues });
  }

  return freezeSet(compiled, skipped, inactive);
}

function freezeSet(compiled: CompiledControl[], skipped: SkippedControl[], inactive: number): CompiledControlSet {
  const bucket = (stage: Stage, type: StepType) =>
    Object.freeze(compiled.filter((c) => c.stages.includes(stage) && c.stepTypes.includes(type)));
  return Object.freeze({
    controls: Object.freeze(compiled),
    index: Object.freeze({
      pre: Object.freeze({ tool: bucket('pre', 'tool'), llm: bucket('pre', 'llm') }),
      post: Object.freeze({ tool: bucket('post', 'tool'), llm: bucket('post', 'llm') }),
    }),
    byName: Object.freeze({
      pre: Object.freeze({ tool: new Map(), llm: new Map() }),
      post: Object.freeze({ tool: new Map(), llm: new Map() }),
    }),
    skipped: Object.freeze(skipped),
    inactive,
  });
}

/** An empty set, for agents without controls. */
export const EMPTY_CONTROL_SET: CompiledControlSet = freezeSet([], [], 0);
