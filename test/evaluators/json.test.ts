import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, type EvaluationOutcome } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { ControlDataSchema } from '../../src/model/index.js';
import { jsonEvaluator, MAX_JSON_TEXT } from '../../src/evaluators/json/index.js';
import type { EvaluatorOutcome } from '../../src/evaluators/types.js';

const registry = createDefaultRegistry();

/** A 5-field tool argument schema, the kind a json control guards. */
const SEARCH_ARGS = {
  type: 'object',
  properties: {
    query: { type: 'string', minLength: 1, maxLength: 200 },
    limit: { type: 'integer', minimum: 1, maximum: 1000 },
    order: { enum: ['asc', 'desc'] },
    email: { type: 'string', format: 'email' },
    tags: { type: 'array', items: { type: 'string', pattern: '^[a-z-]+$' }, maxItems: 5 },
  },
  required: ['query', 'limit'],
  additionalProperties: false,
};

/** The outcome, whether the check answered on the loop or from a thread (json/validate-pool.ts). */
async function run(value: unknown, schema: unknown = SEARCH_ARGS): Promise<EvaluatorOutcome> {
  const compiled = registry.compile('json', { schema });
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.issues));
  return await compiled.compiled.check(value);
}

describe('json evaluator: the value must satisfy the schema; a violation matches', () => {
  const cases: Array<[string, unknown, boolean, string?]> = [
    ['valid arguments', { query: 'open orders', limit: 50, order: 'asc' }, false],
    ['valid arguments as a JSON string (model output)', '{"query":"x","limit":10}', false],
    ['a limit above the maximum', { query: 'x', limit: 5000 }, true, 'limit: must be <= 1000'],
    ['a missing required field', { query: 'x' }, true, 'limit: is required'],
    ['an unknown field', { query: 'x', limit: 1, drop: true }, true, 'drop: unknown field "drop"'],
    ['a bad enum value', { query: 'x', limit: 1, order: 'random' }, true, 'order: must be one of "asc", "desc"'],
    ['a bad format', { query: 'x', limit: 1, email: 'not-an-email' }, true, 'email: must match format "email"'],
    ['a nested array item', { query: 'x', limit: 1, tags: ['ok', 'NOT OK'] }, true, 'tags[1]: must match pattern'],
    ['a string that is not JSON', 'limit=5000', true, 'value is not JSON'],
    ['a JSON string of the wrong type', '"just text"', true, '(value): must be object'],
    ['a number where an object is wanted', 42, true, '(value): must be object'],
  ];
  it.each(cases)('%s', async (_name, value, matched, message) => {
    const out = await run(value);
    expect(out.matched).toBe(matched);
    if (message !== undefined) expect(out.message).toContain(message);
  });

  it('names the first three failing paths and counts the rest', async () => {
    const out = await run({ limit: 0, order: 'x', email: 'y', extra: 1 });
    expect(out.message?.split('; ')).toHaveLength(3);
    expect(out.message).toMatch(/\(and \d+ more\)$/);
  });

  it('does not echo the value of a string that is not JSON', async () => {
    const out = await run('card 4111 1111 1111 1111');
    expect(out.message).toBe('value is not JSON');
  });

  it('a boolean schema: false refuses everything, true nothing', async () => {
    expect((await run({}, false)).matched).toBe(true);
    expect((await run({}, true)).matched).toBe(false);
  });

  it('refuses a string longer than MAX_JSON_TEXT as an evaluator error (on_error decides)', () => {
    const big = `"${'x'.repeat(MAX_JSON_TEXT)}"`;
    const compiled = registry.compile('json', { schema: { type: 'string' } });
    if (!compiled.ok) throw new Error('compile');
    expect(() => compiled.compiled.check(big)).toThrow(/at most/);
  });

  it('survives hostile input: deep nesting, a 100 KB value', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    const out = await run(deep, { type: 'array' });
    expect(out.matched).toBe(false);
    const wide = { query: 'x'.repeat(100_000), limit: 1 };
    expect((await run(wide)).message).toContain('query: must NOT have more than 200 characters');
  });
});

describe('json evaluator: through a control, messages name places in the step', () => {
  async function messageOf(path: string, input: unknown): Promise<{ message: string | null | undefined; failing: unknown }> {
    const data = ControlDataSchema.parse({ selector: { path }, evaluator: { name: 'json', config: { schema: SEARCH_ARGS } }, action: { decision: 'deny' } });
    const set = compileControls([{ control_id: 1, name: 'args', data }], registry);
    const out: EvaluationOutcome = await evaluateStep(set, { type: 'tool', name: 'search', input }, 'pre');
    const match = out.result.matches[0];
    return { message: match?.result.message, failing: match?.result.metadata?.failing_paths };
  }

  it.each([
    ['input', { query: 'x', limit: 5000 }, 'input.limit: must be <= 1000', ['input.limit']],
    ['input', { query: 'x', limit: 1, tags: ['ok', 'NOT OK'] }, 'input.tags[1]: must match pattern', ['input.tags[1]']],
    ['input', 42, 'input: must be object', ['input']],
    ['input.args', { args: { query: 'x' } }, 'input.args.limit: is required', ['input.args.limit']],
  ] as const)('selector %s: %j', async (path, input, message, failing) => {
    const out = await messageOf(path, input);
    expect(out.message).toContain(message);
    expect(out.failing).toEqual(failing);
  });

  it('the whole step (*) is named from its root, as ajv reads it', async () => {
    const data = ControlDataSchema.parse({
      selector: { path: '*' },
      evaluator: { name: 'json', config: { schema: { type: 'object', properties: { input: { type: 'object', properties: { limit: { maximum: 10 } } } } } } },
      action: { decision: 'deny' },
    });
    const set = compileControls([{ control_id: 1, name: 'step', data }], registry);
    const out = await evaluateStep(set, { type: 'tool', name: 'search', input: { limit: 50 } }, 'pre');
    expect(out.result.matches[0]?.result.message).toContain('input.limit: must be <= 10');
    expect(out.result.matches[0]?.result.message).not.toContain('*');
  });
});

describe('json evaluator: configs that cannot work are refused with the field path', () => {
  const bad: Array<[string, unknown, string, RegExp]> = [
    ['no schema', {}, 'evaluator.config.schema', /./],
    ['a schema that is a string', { schema: 'object' }, 'evaluator.config.schema', /./],
    ['a wrong type name', { schema: { type: 'obj' } }, 'evaluator.config.schema.type', /not a valid JSON Schema/],
    ['a bad nested keyword value', { schema: { properties: { limit: { maximum: 'ten' } } } }, 'evaluator.config.schema.properties.limit.maximum', /must be number/],
    ['an unknown keyword (a typo)', { schema: { type: 'integer', maximun: 3 } }, 'evaluator.config.schema', /unknown keyword: "maximun"/],
    ['a $ref that resolves nowhere', { schema: { $ref: 'https://example.com/schema.json' } }, 'evaluator.config.schema', /can't resolve reference/],
    ['a pattern RE2 refuses', { schema: { type: 'string', pattern: '(a)\\1' } }, 'evaluator.config.schema', /invalid regular expression/],
    ['an unknown config key', { schema: {}, schemas: {} }, 'evaluator.config.schemas', /unknown field/],
  ];
  it.each(bad)('%s', (_name, config, field, message) => {
    const issues = registry.validateConfig('json', config);
    expect(issues.map((i) => i.field)).toContain(field);
    expect(issues.find((i) => i.field === field)?.message).toMatch(message);
  });

  it('compiles a schema once per control and shares it between controls with the same schema', () => {
    const made: string[] = [];
    const parts = { share: <T extends object>(key: string, make: () => T): T => (made.push(key), make()) };
    jsonEvaluator.compile({ schema: SEARCH_ARGS }, parts);
    expect(made).toEqual([JSON.stringify(SEARCH_ARGS)]);
  });
});
