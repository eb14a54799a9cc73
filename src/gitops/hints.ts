/** Turns a field issue into a stable diagnostic code and a hint that says what would fix it. */
import type { FieldIssue } from '../model/index.js';

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

export function hintFor(code: string, field: string, message = ''): string {
  switch (code) {
    case 'yaml_syntax':
      return 'fix the YAML syntax at this spot (check indentation, quotes and colons)';
    case 'unknown_field':
      return `remove "${field.split('.').pop() ?? field}" or fix its spelling; unknown keys are errors so a typo never silently disables a rule (run "guardctl schema" for the allowed keys)`;
    case 'unknown_evaluator':
      return 'use one of the evaluators the server lists (GET /api/v1/evaluators), for example regex or list';
    case 'invalid_pattern':
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
    case 'unknown_kind':
      return 'set "kind:" to Control, Agent or Test';
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
