/**
 * THE validation of control data: the server's POST /controls/validate and PUT data, and
 * `guardctl validate`, all call this. Schema first (field paths from zod), then what only
 * the evaluators know (their config schemas, patterns that must compile), then
 * step_name_regex. Returns issues; never throws.
 *
 * When the schema fails, the evaluator and pattern checks still run on the parts that are
 * well-formed on their own, so a user fixing a pull request sees every problem at once.
 */
import {
  ControlDataSchema,
  ControlDocumentSchema,
  EvaluatorSpecSchema,
  MAX_CONDITION_DEPTH,
  ScopeSchema,
  controlDataOf,
  fieldIssuesOf,
  type ControlData,
  type ControlDocument,
  type FieldIssue,
} from '../model/index.js';
import { compilePattern } from '../evaluators/regex/re2.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ValidationOutcome } from './api.js';
import { buildControl } from './build-control.js';

export function validateControlData(input: unknown, registry: EvaluatorRegistry): ValidationOutcome {
  const parsed = ControlDataSchema.safeParse(input);
  if (!parsed.success) return { ok: false, issues: withPartChecks(fieldIssuesOf(parsed.error), input, registry) };
  const built = buildControl(0, 'validation', parsed.data, registry);
  return built.ok ? { ok: true, data: parsed.data } : { ok: false, issues: built.issues };
}

export type DocumentValidationOutcome =
  | { ok: true; document: ControlDocument; data: ControlData }
  | { ok: false; issues: FieldIssue[] };

/** The same rules for a `kind: Control` YAML document (paths relative to the document). */
export function validateControlDocument(input: unknown, registry: EvaluatorRegistry): DocumentValidationOutcome {
  const parsed = ControlDocumentSchema.safeParse(input);
  if (!parsed.success) return { ok: false, issues: withPartChecks(fieldIssuesOf(parsed.error), input, registry) };
  const data = controlDataOf(parsed.data);
  const built = buildControl(0, parsed.data.name, data, registry);
  return built.ok ? { ok: true, document: parsed.data, data } : { ok: false, issues: built.issues };
}

/**
 * The schema's issues plus what the evaluators and the regex engine say about the parts
 * that parse on their own: each `evaluator` (top level or in a condition tree) and
 * `scope.step_name_regex`. A part with a schema issue inside it does not parse, so it is
 * left to that issue.
 */
function withPartChecks(schemaIssues: FieldIssue[], input: unknown, registry: EvaluatorRegistry): FieldIssue[] {
  const extra: FieldIssue[] = [];
  if (isRecord(input)) {
    if (isRecord(input.scope)) checkStepNameRegex(input.scope.step_name_regex, extra);
    if (input.evaluator !== undefined) checkEvaluator(input.evaluator, 'evaluator', registry, extra);
    if (input.condition !== undefined) checkCondition(input.condition, 'condition', 0, registry, extra);
  }
  // One diagnostic per field: a field the schema already reports is not reported again.
  const reported = new Set(schemaIssues.map((i) => i.field));
  const out = [...schemaIssues];
  for (const issue of extra) {
    if (reported.has(issue.field)) continue;
    out.push(issue);
  }
  return out;
}

function checkStepNameRegex(value: unknown, out: FieldIssue[]): void {
  const parsed = ScopeSchema.shape.step_name_regex.safeParse(value);
  if (!parsed.success || parsed.data === undefined) return;
  const re = compilePattern(parsed.data);
  // The same field and code buildControl reports for a control that parses.
  if (typeof re === 'string') out.push({ field: 'scope.step_name_regex', code: 'invalid_regex', message: re });
}

function checkEvaluator(value: unknown, at: string, registry: EvaluatorRegistry, out: FieldIssue[]): void {
  const parsed = EvaluatorSpecSchema.safeParse(value);
  if (parsed.success) out.push(...registry.validateConfig(parsed.data.name, parsed.data.config, at));
}

/** Walks the raw tree as far as it is shaped like a condition; depth-capped like the schema. */
function checkCondition(value: unknown, at: string, depth: number, registry: EvaluatorRegistry, out: FieldIssue[]): void {
  if (!isRecord(value) || depth >= MAX_CONDITION_DEPTH) return;
  for (const key of ['and', 'or'] as const) {
    const list = value[key];
    if (Array.isArray(list)) list.forEach((child, i) => checkCondition(child, `${at}.${key}[${i}]`, depth + 1, registry, out));
  }
  if (value.not !== undefined) checkCondition(value.not, `${at}.not`, depth + 1, registry, out);
  if (value.evaluator !== undefined) checkEvaluator(value.evaluator, `${at}.evaluator`, registry, out);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
