/**
 * The `json` evaluator: the selected value must satisfy a JSON Schema (draft 2020-12); the
 * control matches when it does not. A selected string is parsed as JSON first (model
 * outputs and many tool arguments are strings); a string that is not JSON is a violation.
 * The schema is compiled once per control with ajv (json-schema.ts: RE2 patterns, strict
 * keywords, no remote $ref), never per step. A schema that recurses without moving into a
 * property or an item could never finish and is refused (schema-shape.ts).
 *
 * The event loop validates only what it can bound: a value of at most INLINE_MAX_CHARS
 * against a schema whose work is linear in the sizes of the two, where that product stays
 * under INLINE_MAX_WORK. Everything else is validated on a thread with a time limit
 * (validate-pool.ts), so that no schema and no value can hold the server.
 */
import { z } from 'zod';
import type { JsonObject } from '../../model/index.js';
import type { ErrorObject } from 'ajv/dist/2020.js';
import { compileJsonSchema, fieldPathOf, issuesOf, newAjv, type CompiledSchema } from '../json-schema.js';
import { ConfigError, type CompiledCheck, type EvaluatorDefinition, type EvaluatorOutcome } from '../types.js';
import { inPlaceCycleOf, isLinearSchema } from './schema-shape.js';
import { validatePool } from './validate-pool.js';

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

/** A value (as JSON text) longer than this is validated on a thread, whatever the schema. */
export const INLINE_MAX_CHARS = 4096;

/**
 * The most (schema characters x value characters) validated on the event loop. ajv's work
 * on a linear schema (schema-shape.ts) is at most about one step per pair of schema part
 * and value part; this keeps the worst such validation to about a millisecond.
 */
export const INLINE_MAX_WORK = 1_000_000;

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
    const text = JSON.stringify(schema);
    const make = (): Compiled => ({ validate: validatorOf(schema), text, linear: isLinearSchema(schema) });
    const compiled = parts ? parts.share(text, make) : make();
    // Messages name places in the step (`input.limit`), as the control author wrote the
    // selector; the whole step (`*`) and callers that give no selector keep paths relative.
    const prefix = site?.selectorPath === undefined || site.selectorPath === '*' ? '' : site.selectorPath;
    return checkOf(compiled, prefix);
  },
};

/** Compiles the schema, reporting where it is wrong: meta-schema errors name the field. */
function validatorOf(schema: JsonObject | boolean): CompiledSchema {
  const ajv = newAjv();
  if (!ajv.validateSchema(schema)) {
    const first = issuesOf(ajv.errors, 'schema')[0];
    throw new ConfigError(first?.field ?? 'schema', `not a valid JSON Schema: ${first?.message ?? 'invalid'}`);
  }
  const cycle = inPlaceCycleOf(schema);
  if (cycle !== null) {
    throw new ConfigError(
      fieldPathOf(cycle.pointer.slice(1), 'schema'),
      `the schema refers back to itself (${cycle.path.join(' -> ')} -> ${cycle.pointer}) without moving into a property or an item: ` +
        'it would apply itself to the same value for ever and could never finish',
    );
  }
  const compiled = compileJsonSchema(schema, ajv);
  if (typeof compiled === 'string') throw new ConfigError('schema', compiled);
  return compiled;
}

interface Compiled {
  validate: CompiledSchema;
  /** The schema as JSON: what a thread is sent, and the key it compiles it under. */
  text: string;
  /** schema-shape.ts: its work is bounded by the sizes of the schema and the value. */
  linear: boolean;
}

/** `prefix`: the selector's path, put before each failing path ('' for none). */
function checkOf({ validate, text: schemaText, linear }: Compiled, prefix: string): CompiledCheck {
  return (value, memo) => {
    if (value === undefined) return VALID;
    const isText = typeof value === 'string';
    if (isText && value.length > MAX_JSON_TEXT) {
      throw new Error(`value is ${value.length} characters; the json evaluator reads at most ${MAX_JSON_TEXT}`);
    }
    const text = isText ? value : (memo?.text(value) ?? JSON.stringify(value));
    if (!linear || text.length > INLINE_MAX_CHARS || text.length * schemaText.length > INLINE_MAX_WORK) {
      return validateAway(schemaText, text, prefix);
    }
    let data: unknown = value;
    if (isText) {
      try {
        data = JSON.parse(value) as unknown;
      } catch {
        // The parser's message quotes the text; what the control guards is not echoed.
        return NOT_JSON;
      }
    }
    if (validate(data)) return VALID;
    return violationOf(validate.errors, prefix);
  };
}

/** Validates on a thread (validate-pool.ts); a timeout or a full queue rejects: an evaluator error. */
async function validateAway(schema: string, text: string, prefix: string): Promise<EvaluatorOutcome> {
  const answer = await validatePool().validate({ schema, text });
  if ('not_json' in answer) return NOT_JSON;
  if (answer.valid) return VALID;
  return violationOf(answer.errors, prefix);
}

function violationOf(errors: readonly ErrorObject[] | null | undefined, prefix: string): EvaluatorOutcome {
  const issues = issuesOf(errors, prefix);
  const named = issues.slice(0, MAX_NAMED).map((i) => `${i.field === '' ? '(value)' : i.field}: ${i.message}`);
  const more = issues.length > MAX_NAMED ? ` (and ${issues.length - MAX_NAMED} more)` : '';
  return {
    matched: true,
    confidence: 1,
    message: `${named.join('; ')}${more}`,
    metadata: { failing_paths: issues.slice(0, MAX_NAMED).map((i) => i.field) },
  };
}
