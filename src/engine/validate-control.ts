/**
 * THE validation of control data: the server's POST /controls/validate and PUT data, and
 * `guardctl validate`, all call this. Schema first (field paths from zod), then what only
 * the evaluators know (their config schemas, patterns that must compile), then
 * step_name_regex. Returns issues; never throws.
 */
import {
  ControlDataSchema,
  ControlDocumentSchema,
  controlDataOf,
  fieldIssuesOf,
  type ControlData,
  type ControlDocument,
  type FieldIssue,
} from '../model/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { ValidationOutcome } from './api.js';
import { buildControl } from './build-control.js';

export function validateControlData(input: unknown, registry: EvaluatorRegistry): ValidationOutcome {
  const parsed = ControlDataSchema.safeParse(input);
  if (!parsed.success) return { ok: false, issues: fieldIssuesOf(parsed.error) };
  const built = buildControl(0, 'validation', parsed.data, registry);
  return built.ok ? { ok: true, data: parsed.data } : { ok: false, issues: built.issues };
}

export type DocumentValidationOutcome =
  | { ok: true; document: ControlDocument; data: ControlData }
  | { ok: false; issues: FieldIssue[] };

/** The same rules for a `kind: Control` YAML document (paths relative to the document). */
export function validateControlDocument(input: unknown, registry: EvaluatorRegistry): DocumentValidationOutcome {
  const parsed = ControlDocumentSchema.safeParse(input);
  if (!parsed.success) return { ok: false, issues: fieldIssuesOf(parsed.error) };
  const data = controlDataOf(parsed.data);
  const built = buildControl(0, parsed.data.name, data, registry);
  return built.ok ? { ok: true, document: parsed.data, data } : { ok: false, issues: built.issues };
}
