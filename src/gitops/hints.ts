/** Turns a field issue into a stable diagnostic code and a hint that says what would fix it. */
import type { FieldIssue } from '../model/index.js';
import { editDistance } from '../model/edit-distance.js';

const PATTERN_FIELD = /(^|\.)(pattern|step_name_regex)$/;

/**
 * Field issues keep zod's code, except evaluator problems, which get names a user can
 * search for: unknown_evaluator, invalid_pattern, invalid_config.
 */
export function classifyIssue(issue: FieldIssue): string {
  const field = issue.field;
  if (issue.code === 'unknown_field') return 'unknown_field';
  if (/(^|\.)evaluator\.name$/.test(field) && /unknown|not (a )?known|no evaluator|registered/i.test(issue.message)) {
    return 'unknown_evaluator';
  }
  if (issue.code === 'unknown_evaluator') return 'unknown_evaluator';
  if (PATTERN_FIELD.test(field) && issue.code !== 'invalid_type' && issue.code !== 'too_small') {
    return 'invalid_pattern';
  }
  if (/(^|\.)evaluator\.config(\.|\[|$)/.test(field)) return 'invalid_config';
  return issue.code;
}

/** What a hint can use beyond the issue itself: the names that would have been accepted. */
export interface HintContext {
  /** For unknown_field: the keys allowed next to the unknown one (schema order). */
  allowedKeys?: readonly string[];
  /** For unknown_evaluator: the registry's evaluator names. */
  evaluators?: readonly string[];
  /** For unknown_kind: the value given. */
  given?: string;
}

export function hintFor(code: string, field: string, message = '', context: HintContext = {}): string {
  switch (code) {
    case 'yaml_syntax':
      return 'fix the YAML syntax at this spot (check indentation, quotes and colons)';
    case 'unknown_field':
      return unknownFieldHint(field, context.allowedKeys ?? []);
    case 'unknown_evaluator':
      return unknownEvaluatorHint(message, context.evaluators ?? []);
    case 'invalid_pattern':
      if (/^pattern too (long|large)/.test(message)) {
        return 'shorten the pattern or lower its counted repetitions ({n,m}); docs/security.md gives the limits and why';
      }
      return 'fix the regular expression; patterns use RE2 syntax (no look-around or back-references; (?i) works)';
    case 'invalid_config':
      return "make the config match the evaluator's schema (GET /api/v1/evaluators shows it)";
    case 'missing_field':
      return `add ${field} (run "guardctl schema" to see what it holds)`;
    case 'invalid_type':
      return `give ${field || 'the value'} the expected type`;
    case 'invalid_value':
      return `use one of the allowed values for ${field || 'this field'}`;
    case 'too_small':
      return /empty list/.test(message) ? `leave ${field} out to mean "all", or list at least one value` : `make ${field || 'the value'} longer or larger`;
    case 'too_big':
      return `make ${field || 'the value'} shorter or smaller`;
    case 'invalid_format':
      return `change ${field || 'the value'} to the expected format`;
    case 'missing_kind':
      return 'set "kind:" to Control, Agent or Test';
    case 'unknown_kind': {
      const guess = context.given === undefined ? null : closestName(context.given, KIND_NAMES);
      return guess ? `did you mean "${guess}"? "kind:" is one of Control, Agent or Test` : 'set "kind:" to Control, Agent or Test';
    }
    case 'unlinked_control':
      return 'add the control to an agent\'s "controls:" list, or delete it if it is no longer needed';
    case 'disabled_linked':
      return 'remove the link, or set enabled: true if the control should run';
    case 'duplicate_link':
      return 'list each control once';
    default:
      return field ? `fix ${field}` : 'fix the document';
  }
}

const KIND_NAMES = ['Control', 'Agent', 'Test'];

function unknownFieldHint(field: string, allowed: readonly string[]): string {
  const key = field.split('.').pop() ?? field;
  const guess = closestName(key, allowed);
  if (guess) return `did you mean "${guess}"? Unknown keys are errors so a typo never silently disables a rule`;
  if (allowed.length > 0) return `remove "${key}"; the keys allowed here are ${allowed.join(', ')}`;
  return `remove "${key}" or fix its spelling; unknown keys are errors so a typo never silently disables a rule (run "guardctl schema" for the allowed keys)`;
}

function unknownEvaluatorHint(message: string, evaluators: readonly string[]): string {
  const given = /unknown evaluator "([^"]*)"/.exec(message)?.[1];
  const guess = given === undefined ? null : closestName(given, evaluators);
  if (guess) return `did you mean "${guess}"? (GET /api/v1/evaluators lists the server's evaluators)`;
  if (evaluators.length > 0) return `use one of the evaluators this build knows: ${evaluators.join(', ')} (GET /api/v1/evaluators lists the server's)`;
  return 'use one of the evaluators the server lists (GET /api/v1/evaluators), for example regex or list';
}

/**
 * The candidate nearest to a typo (case-insensitive edit distance), when it is near enough
 * to be a useful guess: at most a third of the word's length, and at least 2, apart.
 */
export function closestName(word: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const candidate of candidates) {
    const d = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}
