/**
 * The `json` evaluator: the selected value must satisfy a JSON Schema (draft 2020-12); the
 * control matches when it does not. A selected string is parsed as JSON first (model
 * outputs and many tool arguments are strings); a string that is not JSON is a violation.
 * The schema is compiled once per control with ajv (json-schema.ts: RE2 patterns, strict
 * keywords, no remote $ref), never per step.
 */
import { z } from 'zod';
import type { JsonObject } from '../../model/index.js';
import { compileJsonSchema, issuesOf, newAjv, type CompiledSchema } from '../json-schema.js';
import { ConfigError, type CompiledCheck, type EvaluatorDefinition, type EvaluatorOutcome } from '../types.js';

export const JsonConfigSchema = z.strictObject({
  schema: z
    .union([z.record(z.string(), z.unknown()), z.boolean()])
    .describe('JSON Schema (draft 2020-12) the selected value must satisfy; the control matches when it does not'),
});
export type JsonConfig = z.infer<typeof JsonConfigSchema>;

/**
 * A selected string longer than this is not parsed: an evaluator error, which the
 * control's on_error decides. Parsing and validating are linear, but a guard has no
 * business holding the event loop for a multi-megabyte argument.
 */
export const MAX_JSON_TEXT = 1024 * 1024;

/** Failing paths a message names at most. */
const MAX_NAMED = 3;

const VALID: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });
const NOT_JSON: EvaluatorOutcome = Object.freeze({ matched: true, confidence: 1, message: 'value is not JSON', metadata: null });

export const jsonEvaluator: EvaluatorDefinition = {
  name: 'json',
  description:
    'Matches when the selected value violates a JSON Schema (draft 2020-12). A selected string is parsed as JSON ' +
    'first; a string that is not JSON is a violation. The message names the first failing paths.',
  configSchema: z.toJSONSchema(JsonConfigSchema, { io: 'input' }),
  zodSchema: JsonConfigSchema,
  compile(config, parts, site) {
    const { schema } = JsonConfigSchema.parse(config);
    // Controls repeating a schema share one compiled validator (ajv's code is immutable).
    const make = () => validatorOf(schema);
    const validate = parts ? parts.share(JSON.stringify(schema), () => ({ validate: make() })).validate : make();
    // Messages name places in the step (`input.limit`), as the control author wrote the
    // selector; the whole step (`*`) and callers that give no selector keep paths relative.
    const prefix = site?.selectorPath === undefined || site.selectorPath === '*' ? '' : site.selectorPath;
    return checkOf(validate, prefix);
  },
};

/** Compiles the schema, reporting where it is wrong: meta-schema errors name the field. */
function validatorOf(schema: JsonObject | boolean): CompiledSchema {
  const ajv = newAjv();
  if (!ajv.validateSchema(schema)) {
    const first = issuesOf(ajv.errors, 'schema')[0];
    throw new ConfigError(first?.field ?? 'schema', `not a valid JSON Schema: ${first?.message ?? 'invalid'}`);
  }
  const compiled = compileJsonSchema(schema, ajv);
  if (typeof compiled === 'string') throw new ConfigError('schema', compiled);
  return compiled;
}

/** `prefix`: the selector's path, put before each failing path ('' for none). */
function checkOf(validate: CompiledSchema, prefix: string): CompiledCheck {
  return (value) => {
    if (value === undefined) return VALID;
    let data: unknown = value;
    if (typeof value === 'string') {
      if (value.length > MAX_JSON_TEXT) {
        throw new Error(`value is ${value.length} characters; the json evaluator reads at most ${MAX_JSON_TEXT}`);
      }
      try {
        data = JSON.parse(value) as unknown;
      } catch {
        // The parser's message quotes the text; what the control guards is not echoed.
        return NOT_JSON;
      }
    }
    if (validate(data)) return VALID;
    return violationOf(validate, prefix);
  };
}

function violationOf(validate: CompiledSchema, prefix: string): EvaluatorOutcome {
  const issues = issuesOf(validate.errors, prefix);
  const named = issues.slice(0, MAX_NAMED).map((i) => `${i.field === '' ? '(value)' : i.field}: ${i.message}`);
  const more = issues.length > MAX_NAMED ? ` (and ${issues.length - MAX_NAMED} more)` : '';
  return {
    matched: true,
    confidence: 1,
    message: `${named.join('; ')}${more}`,
    metadata: { failing_paths: issues.slice(0, MAX_NAMED).map((i) => i.field) },
  };
}
