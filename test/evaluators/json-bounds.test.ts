/**
 * The json evaluator's bounds (guardctl issue #34, items 3 and 13): which validations run
 * on the event loop (a small value against a schema whose work is linear), that every
 * other one gives the same verdict from a thread, and that a schema which refers back to
 * itself without moving into a property or an item is refused when saved.
 */
import { describe, expect, it } from 'vitest';
import { INLINE_MAX_CHARS } from '../../src/evaluators/json/index.js';
import { inPlaceCycleOf, isLinearSchema } from '../../src/evaluators/json/schema-shape.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import type { EvaluatorOutcome } from '../../src/evaluators/types.js';

const registry = createDefaultRegistry();

function checkOf(schema: unknown) {
  const compiled = registry.compile('json', { schema });
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.issues));
  return compiled.compiled.check;
}

const ARGS = { type: 'object', properties: { limit: { type: 'integer', maximum: 10 }, tags: { type: 'array', maxItems: 3 } }, required: ['limit'] };

describe('json evaluator: what runs on the event loop', () => {
  it('a small value against a linear schema is answered at once (no promise)', () => {
    const out = checkOf(ARGS)({ limit: 50 });
    expect(out).not.toBeInstanceOf(Promise);
    expect((out as EvaluatorOutcome).matched).toBe(true);
  });

  it.each([
    ['a schema with a $ref', { $defs: { n: { type: 'integer' } }, type: 'object', properties: { limit: { $ref: '#/$defs/n' } } }, { limit: 1 }],
    ['a schema with uniqueItems', { type: 'array', uniqueItems: true }, [1, 2]],
    ['a schema with $dynamicRef', { $dynamicAnchor: 'n', type: 'object', properties: { a: { $dynamicRef: '#n' } } }, { a: {} }],
    ['a value longer than INLINE_MAX_CHARS', ARGS, { limit: 1, pad: 'x'.repeat(INLINE_MAX_CHARS) }],
    ['a value as JSON text longer than INLINE_MAX_CHARS', ARGS, JSON.stringify({ limit: 1, pad: 'x'.repeat(INLINE_MAX_CHARS) })],
  ])('%s goes to a thread', async (_label, schema, value) => {
    const out = checkOf(schema)(value);
    expect(out).toBeInstanceOf(Promise);
    expect((await out).matched).toBe(false);
  });

  it('a thread gives the verdicts and messages the loop gives', async () => {
    const pad = 'x'.repeat(INLINE_MAX_CHARS);
    const check = checkOf(ARGS);
    const away = await check({ limit: 50, tags: [1, 2, 3, 4], pad });
    const here = await check({ limit: 50, tags: [1, 2, 3, 4] });
    expect(away).toEqual(here);
    expect(away.message).toContain('limit: must be <= 10');
    expect(await check(`{"limit": 1, "pad": "${pad}"`)).toMatchObject({ matched: true, message: 'value is not JSON' });
    expect(await check(JSON.stringify({ limit: 1, pad }))).toMatchObject({ matched: false });
  });

  it('linear schemas: no reference keyword and no uniqueItems anywhere', () => {
    expect(isLinearSchema(ARGS)).toBe(true);
    expect(isLinearSchema(true)).toBe(true);
    expect(isLinearSchema({ items: { items: { uniqueItems: false } } })).toBe(false);
    expect(isLinearSchema({ properties: { $ref: { type: 'string' } } })).toBe(false);
  });
});

describe('json evaluator: a schema that recurses without consuming the value is refused', () => {
  const refused: Array<[string, unknown, string]> = [
    ['the root referring to itself', { $ref: '#' }, 'evaluator.config.schema'],
    ['the root through allOf', { allOf: [{ $ref: '#' }] }, 'evaluator.config.schema'],
    ['through anyOf, with a way out', { anyOf: [{ type: 'string' }, { $ref: '#' }] }, 'evaluator.config.schema'],
    ['through not', { not: { $ref: '#' } }, 'evaluator.config.schema'],
    ['through if/then/else', { if: { type: 'object' }, then: { $ref: '#' } }, 'evaluator.config.schema'],
    ['through dependentSchemas', { dependentSchemas: { a: { $ref: '#' } } }, 'evaluator.config.schema'],
    ['two $defs referring to each other', { $defs: { a: { oneOf: [{ $ref: '#/$defs/b' }] }, b: { not: { $ref: '#/$defs/a' } } }, $ref: '#/$defs/a' }, 'evaluator.config.schema.$defs.a'],
    ['a $def referring to itself, unused', { $defs: { a: { $ref: '#/$defs/a' } } }, 'evaluator.config.schema.$defs.a'],
    ['a $def reached inside a property', { properties: { p: { $ref: '#/$defs/a' } }, $defs: { a: { allOf: [{ $ref: '#/$defs/a' }] } } }, 'evaluator.config.schema.$defs.a'],
    ['by $anchor', { $anchor: 'top', allOf: [{ $ref: '#top' }] }, 'evaluator.config.schema'],
    ['by a percent-encoded pointer', { $defs: { 'a b': { $ref: '#/$defs/a%20b' } } }, 'evaluator.config.schema.$defs.a b'],
    ['by an escaped pointer', { $defs: { 'a/b': { $ref: '#/$defs/a~1b' } } }, 'evaluator.config.schema.$defs.a/b'],
    ['by $dynamicRef', { $dynamicAnchor: 'n', anyOf: [{ $dynamicRef: '#n' }] }, 'evaluator.config.schema'],
    ['inside an embedded resource', { $defs: { r: { $id: 'urn:r', $defs: { x: { $ref: '#/$defs/x' } } } } }, 'evaluator.config.schema.$defs.r.$defs.x'],
    ['by an embedded resource id', { $defs: { r: { $id: 'urn:r', allOf: [{ $ref: 'urn:r' }] } } }, 'evaluator.config.schema.$defs.r'],
  ];
  it.each(refused)('%s', (_label, schema, field) => {
    const issues = registry.validateConfig('json', { schema });
    expect(issues.map((i) => i.field)).toContain(field);
    expect(issues.find((i) => i.field === field)?.message).toMatch(/refers back to itself .* could never finish/);
  });

  const accepted: Array<[string, unknown]> = [
    ['a tree through properties', { type: 'object', properties: { children: { type: 'array', items: { $ref: '#' } } } }],
    ['through items', { items: { $ref: '#' } }],
    ['through prefixItems', { prefixItems: [{ $ref: '#' }] }],
    ['through additionalProperties', { additionalProperties: { $ref: '#' } }],
    ['through patternProperties', { patternProperties: { '^a': { $ref: '#' } } }],
    ['through contains', { contains: { $ref: '#' } }],
    ['through propertyNames', { propertyNames: { $ref: '#' } }],
    ['a $def used twice, no cycle', { allOf: [{ $ref: '#/$defs/a' }, { $ref: '#/$defs/a' }], $defs: { a: { type: 'object' } } }],
    ['an enum holding a $ref-looking value', { enum: [{ $ref: '#' }] }],
  ];
  it.each(accepted)('%s is accepted', (_label, schema) => {
    expect(registry.validateConfig('json', { schema })).toEqual([]);
    expect(inPlaceCycleOf(schema)).toBeNull();
  });

  it('a recursive tree schema still validates', async () => {
    const check = checkOf(accepted[0]![1]);
    expect((await check({ children: [{ children: [] }] })).matched).toBe(false);
    expect((await check({ children: [{ children: 'no' }] })).matched).toBe(true);
  });
});
