/**
 * Which controls could apply to a step, from their scope alone (PRODUCT.md: fields
 * combine with AND, step_names OR step_name_regex, unset means all). The SDK uses it to
 * decide whether a step needs the server at all: a step that no `execution: server`
 * control is scoped to is checked entirely in-process, with no network call.
 * It works from the records, not the compiled set, because a server control whose
 * evaluator exists only on the server does not compile here yet still needs its scope.
 */
import { compilePattern } from '../evaluators/regex/re2.js';
import type { Scope, Stage, StepType } from '../model/index.js';

export type ScopeMatcher = (type: StepType, name: string, stage: Stage) => boolean;

/**
 * Step-name regexes are built with the engine's RE2 helper, so `(?i)` flags and the
 * search semantics match the server's. A regex that does not compile makes the scope
 * match every name: when unsure, the SDK asks rather than skips.
 */
export function compileScope(scope: Scope): ScopeMatcher {
  const types = scope.step_types ? new Set<string>(scope.step_types) : null;
  const stages = scope.stages ? new Set<string>(scope.stages) : null;
  const names = scope.step_names ? new Set(scope.step_names) : null;
  let regex: ((name: string) => boolean) | null = null;
  if (scope.step_name_regex !== undefined) {
    const re = compilePattern(scope.step_name_regex);
    regex = typeof re === 'string' ? () => true : (name) => re.test(name);
  }
  return (type, name, stage) => {
    if (types && !types.has(type)) return false;
    if (stages && !stages.has(stage)) return false;
    if (names === null && regex === null) return true;
    return (names?.has(name) ?? false) || (regex?.(name) ?? false);
  };
}
