/**
 * JSON Schema (draft 2020-12) validation with ajv, for what users and plugins describe with
 * JSON Schema: plugin evaluator configs (what GET /evaluators serves) and the `json`
 * evaluator's schemas. Schemas are compiled once (the registry keeps each plugin's check;
 * the json evaluator compiles per control), never per check.
 *
 * Two choices make a schema from a control safe to run on hostile input: `pattern` and
 * `patternProperties` compile with RE2 under the same limits as regex controls (linear
 * time, bounded program size), and no `$ref` is ever fetched (ajv has no loader here), so a
 * schema cannot make the server reach anywhere. Unknown keywords are refused (strict
 * schema): a typo such as `maximun` would otherwise be a rule that silently checks nothing.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FieldIssue, JsonObject } from '../model/index.js';
import { compilePattern } from './regex/re2.js';

// ajv-formats is CommonJS: its default export is the function under TypeScript's NodeNext view.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/** RE2 behind ajv's pattern keywords; a pattern RE2 refuses makes the schema not compile. */
const re2Engine = Object.assign(
  (pattern: string, flags: string) => {
    const re = compilePattern(pattern, flags.replace('u', ''));
    if (typeof re === 'string') throw new Error(`pattern ${JSON.stringify(pattern)}: ${re}`);
    return re;
  },
  { code: 're2' },
);

/** ajv's settings, but for the RE2 engine (json/validate-pool.ts gives its threads the same). */
export const AJV_OPTIONS = Object.freeze({
  allErrors: true,
  strictSchema: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  validateFormats: true,
});

/** A fresh ajv with formats and the safe settings above. */
export function newAjv(): Ajv2020 {
  const ajv = new Ajv2020({ ...AJV_OPTIONS, code: { regExp: re2Engine } });
  return addFormats(ajv);
}

export type CompiledSchema = ValidateFunction;

/** Compiles `schema`, or says why it cannot be (an unknown keyword, a bad $ref, a pattern RE2 refuses). */
export function compileJsonSchema(schema: unknown, ajv: Ajv2020 = newAjv()): CompiledSchema | string {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    if (typeof schema !== 'boolean') return 'a JSON Schema is an object (or true/false)';
  }
  try {
    return ajv.compile(schema as JsonObject);
  } catch (err) {
    return `not a valid JSON Schema: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** `/input/items/0` -> `input.items[0]`, prefixed with `path`. */
export function fieldPathOf(pointer: string, path = ''): string {
  let out = path;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    out = /^\d+$/.test(key) ? `${out}[${key}]` : out === '' ? key : `${out}.${key}`;
  }
  return out;
}

const CODES: Record<string, FieldIssue['code']> = {
  type: 'invalid_type',
  required: 'invalid_type',
  enum: 'invalid_value',
  const: 'invalid_value',
  additionalProperties: 'unknown_field',
  unevaluatedProperties: 'unknown_field',
  minimum: 'too_small',
  exclusiveMinimum: 'too_small',
  minLength: 'too_small',
  minItems: 'too_small',
  minProperties: 'too_small',
  maximum: 'too_big',
  exclusiveMaximum: 'too_big',
  maxLength: 'too_big',
  maxItems: 'too_big',
  maxProperties: 'too_big',
};

/**
 * An ajv error as a field issue: the field the error is about (the missing or unknown
 * key itself for required and additionalProperties) and ajv's message.
 */
export function issueOf(error: ErrorObject, path: string): FieldIssue {
  const params = error.params as { missingProperty?: string; additionalProperty?: string; unevaluatedProperty?: string; allowedValues?: unknown[] };
  let field = fieldPathOf(error.instancePath, path);
  let message = error.message ?? 'is invalid';
  const key = params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty;
  if (key !== undefined) {
    field = field === '' ? key : `${field}.${key}`;
    message = params.missingProperty !== undefined ? 'is required' : `unknown field "${key}"`;
  } else if (error.keyword === 'enum' && Array.isArray(params.allowedValues)) {
    message = `must be one of ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return { field, code: CODES[error.keyword] ?? 'invalid_value', message };
}

/** Ajv's combinator errors (anyOf, oneOf, if) only repeat the ones under them. */
const SUMMARY_KEYWORDS = new Set(['anyOf', 'oneOf', 'if', 'not']);

/** The issues of a failed validation, one per field (the first reported wins). */
export function issuesOf(errors: readonly ErrorObject[] | null | undefined, path: string): FieldIssue[] {
  const out: FieldIssue[] = [];
  const seen = new Set<string>();
  for (const error of errors ?? []) {
    if (SUMMARY_KEYWORDS.has(error.keyword) && (errors?.length ?? 0) > 1) continue;
    const issue = issueOf(error, path);
    if (seen.has(issue.field)) continue;
    seen.add(issue.field);
    out.push(issue);
  }
  return out;
}

/** Checks a value against a schema compiled once; paths prefixed with the `path` given per call. */
export type JsonSchemaCheck = (value: unknown, path: string) => FieldIssue[];

/**
 * A check of values against `schema` (a plugin's config schema), compiled now. A schema
 * that does not compile makes every check report it on `path` (load-plugins refuses such
 * plugins at startup, so this is a net).
 */
export function jsonSchemaCheck(schema: JsonObject, ajv: Ajv2020 = newAjv()): JsonSchemaCheck {
  const compiled = compileJsonSchema(schema, ajv);
  if (typeof compiled === 'string') {
    return (_value, path) => [{ field: path, code: 'invalid_config', message: `the evaluator's config schema: ${compiled}` }];
  }
  return (value, path) => (compiled(value) ? [] : issuesOf(compiled.errors, path));
}

/** One-off validation (compiles `schema` on every call: for tests and tools, not hot paths). */
export function validateJsonSchema(value: unknown, schema: JsonObject, path: string): FieldIssue[] {
  return jsonSchemaCheck(schema)(value, path);
}
