/**
 * A small JSON Schema validator for plugin evaluator configs. Plugins describe their
 * config with plain JSON Schema (what GET /evaluators serves); this checks the subset
 * such configs need, so that no validator dependency is pulled in:
 * type, properties, required, additionalProperties (false or a schema), enum, const,
 * items, minItems, maxItems, minimum, maximum, minLength, maxLength.
 * Unknown keywords (title, description, default, $schema, ...) are ignored.
 */
import type { FieldIssue, JsonObject } from '../model/index.js';

type Schema = JsonObject;

export function validateJsonSchema(value: unknown, schema: Schema, path: string): FieldIssue[] {
  const issues: FieldIssue[] = [];
  check(value, schema, path, issues);
  return issues;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function typeMatches(actual: string, wanted: string): boolean {
  return actual === wanted || (wanted === 'number' && actual === 'integer');
}

function check(value: unknown, schema: Schema, path: string, out: FieldIssue[]): void {
  const type = schema.type;
  if (type !== undefined) {
    const wanted = (Array.isArray(type) ? type : [type]).filter((t): t is string => typeof t === 'string');
    const actual = typeOf(value);
    if (!wanted.some((w) => typeMatches(actual, w))) {
      out.push({ field: path, code: 'invalid_type', message: `expected ${wanted.join(' or ')}, got ${actual}` });
      return;
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => e === value)) {
    out.push({
      field: path,
      code: 'invalid_value',
      message: `must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`,
    });
  }
  if ('const' in schema && schema.const !== value) {
    out.push({ field: path, code: 'invalid_value', message: `must be ${JSON.stringify(schema.const)}` });
  }
  if (typeof value === 'string') checkString(value, schema, path, out);
  else if (typeof value === 'number') checkNumber(value, schema, path, out);
  else if (Array.isArray(value)) checkArray(value, schema, path, out);
  else if (typeof value === 'object' && value !== null) checkObject(value as JsonObject, schema, path, out);
}

function checkString(value: string, schema: Schema, path: string, out: FieldIssue[]): void {
  if (typeof schema.minLength === 'number' && value.length < schema.minLength) {
    out.push({ field: path, code: 'too_small', message: `must be at least ${schema.minLength} characters` });
  }
  if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) {
    out.push({ field: path, code: 'too_big', message: `must be at most ${schema.maxLength} characters` });
  }
}

function checkNumber(value: number, schema: Schema, path: string, out: FieldIssue[]): void {
  if (typeof schema.minimum === 'number' && value < schema.minimum) {
    out.push({ field: path, code: 'too_small', message: `must be >= ${schema.minimum}` });
  }
  if (typeof schema.maximum === 'number' && value > schema.maximum) {
    out.push({ field: path, code: 'too_big', message: `must be <= ${schema.maximum}` });
  }
}

function checkArray(value: unknown[], schema: Schema, path: string, out: FieldIssue[]): void {
  if (typeof schema.minItems === 'number' && value.length < schema.minItems) {
    out.push({ field: path, code: 'too_small', message: `must have at least ${schema.minItems} item(s)` });
  }
  if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) {
    out.push({ field: path, code: 'too_big', message: `must have at most ${schema.maxItems} item(s)` });
  }
  if (isSchema(schema.items)) {
    for (let i = 0; i < value.length; i++) check(value[i], schema.items, `${path}[${i}]`, out);
  }
}

function checkObject(value: JsonObject, schema: Schema, path: string, out: FieldIssue[]): void {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  if (Array.isArray(schema.required)) {
    for (const key of schema.required) {
      if (typeof key === 'string' && !Object.hasOwn(value, key)) {
        out.push({ field: join(path, key), code: 'invalid_type', message: `${key} is required` });
      }
    }
  }
  for (const [key, child] of Object.entries(value)) {
    const propSchema = properties[key];
    if (isSchema(propSchema)) {
      check(child, propSchema, join(path, key), out);
    } else if (schema.additionalProperties === false) {
      out.push({ field: join(path, key), code: 'unknown_field', message: `unknown field "${key}"` });
    } else if (isSchema(schema.additionalProperties)) {
      check(child, schema.additionalProperties, join(path, key), out);
    }
  }
}

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
