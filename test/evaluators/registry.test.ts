import { describe, expect, it } from 'vitest';
import {
  createDefaultRegistry,
  EvaluatorRegistry,
  validateJsonSchema,
  type EvaluatorDefinition,
} from '../../src/evaluators/index.js';

const plugin: EvaluatorDefinition = {
  name: 'acme.length',
  description: 'matches strings longer than max',
  configSchema: {
    type: 'object',
    properties: {
      max: { type: 'integer', minimum: 1, maximum: 1000 },
      unit: { type: 'string', enum: ['chars', 'bytes'] },
      tags: { type: 'array', items: { type: 'string', minLength: 2 }, minItems: 1 },
    },
    required: ['max'],
    additionalProperties: false,
  },
  compile: (config) => (value) => ({ matched: String(value).length > (config.max as number), confidence: 1 }),
};

describe('EvaluatorRegistry', () => {
  it('lists the built-ins with their JSON Schemas', () => {
    const list = createDefaultRegistry().list();
    expect(list.map((e) => e.name)).toEqual(['regex', 'list', 'json', 'sql', 'pii', 'secrets', 'rate', 'budget', 'repeat', 'prompt_injection']);
    for (const e of list) {
      expect(e.description.length).toBeGreaterThan(10);
      expect(e.config_schema.type).toBe('object');
    }
  });

  it('refuses a second evaluator with the same name', () => {
    expect(() => createDefaultRegistry().register({ ...plugin, name: 'regex' })).toThrow(/already registered/);
  });

  it('lists plugins like the built-ins', () => {
    const registry = createDefaultRegistry({ extra: [plugin] });
    expect(registry.list().map((e) => e.name)).toEqual(['regex', 'list', 'json', 'sql', 'pii', 'secrets', 'rate', 'budget', 'repeat', 'prompt_injection', 'acme.length']);
    expect(registry.get('acme.length')).toBe(plugin);
  });

  type Case = [label: string, config: unknown, fields: string[]];
  const cases: Case[] = [
    ['valid', { max: 5 }, []],
    ['valid with on_error', { max: 5, on_error: 'deny' }, []],
    ['missing required', {}, ['evaluator.config.max']],
    ['wrong type', { max: 'five' }, ['evaluator.config.max']],
    ['not an integer', { max: 1.5 }, ['evaluator.config.max']],
    ['below minimum', { max: 0 }, ['evaluator.config.max']],
    ['above maximum', { max: 1001 }, ['evaluator.config.max']],
    ['not in enum', { max: 5, unit: 'words' }, ['evaluator.config.unit']],
    ['unknown key', { max: 5, color: 'red' }, ['evaluator.config.color']],
    ['item too short', { max: 5, tags: ['ok', 'x'] }, ['evaluator.config.tags[1]']],
    ['too few items', { max: 5, tags: [] }, ['evaluator.config.tags']],
    ['bad on_error', { max: 5, on_error: 'maybe' }, ['evaluator.config.on_error']],
    ['config not an object', ['max'], ['evaluator.config']],
  ];
  it.each(cases)('validates a plugin config against its JSON Schema: %s', (_label, config, fields) => {
    const registry = createDefaultRegistry({ extra: [plugin] });
    expect(registry.validateConfig('acme.length', config).map((i) => i.field)).toEqual(fields);
  });

  it('puts paths under the given position of the evaluator spec', () => {
    const issues = createDefaultRegistry().validateConfig('regex', { pattern: 'a(' }, 'condition.or[2].evaluator');
    expect(issues).toEqual([
      expect.objectContaining({ field: 'condition.or[2].evaluator.config.pattern', code: 'invalid_config' }),
    ]);
  });

  it('names the known evaluators for an unknown name', () => {
    const issues = new EvaluatorRegistry().register(plugin).validateConfig('nope', {});
    expect(issues).toEqual([
      { field: 'evaluator.name', code: 'unknown_evaluator', message: 'unknown evaluator "nope"; known: "acme.length"' },
    ]);
  });

  it('strips on_error before the schema check and hands it to the engine', () => {
    const result = createDefaultRegistry().compile('regex', { pattern: 'x', on_error: 'allow' });
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.compiled.onError).toBe('allow');
  });

  it('checks built-in JSON Schemas with ajv the same way as zod', () => {
    const registry = createDefaultRegistry();
    const schema = registry.get('list')!.configSchema;
    expect(validateJsonSchema({ values: ['a'], logic: 'all' }, schema, 'c')).toEqual([]);
    expect(validateJsonSchema({ values: [], logic: 'some' }, schema, 'c').map((i) => i.field)).toEqual(['c.values', 'c.logic']);
  });

  it('validates plugin configs with full JSON Schema: formats, patterns (RE2), nested paths', () => {
    const registry = new EvaluatorRegistry().register({
      name: 'acme.hook',
      description: 'd',
      configSchema: {
        type: 'object',
        properties: {
          url: { type: 'string', format: 'uri' },
          tags: { type: 'array', items: { type: 'string', pattern: '^[a-z]+$' } },
          limits: { type: 'object', properties: { max: { type: 'integer', maximum: 10 } }, additionalProperties: false },
        },
        required: ['url'],
        additionalProperties: false,
      },
      compile: () => () => ({ matched: false, confidence: 1 }),
    });
    expect(registry.validateConfig('acme.hook', { url: 'https://a.example/x', tags: ['ok'] })).toEqual([]);
    const issues = registry.validateConfig('acme.hook', { url: 'not a uri', tags: ['ok', 'NO'], limits: { max: 11, mx: 1 }, extra: 1 });
    const byField = Object.fromEntries(issues.map((i) => [i.field, i.code]));
    expect(byField).toEqual({
      'evaluator.config.url': 'invalid_value',
      'evaluator.config.tags[1]': 'invalid_value',
      'evaluator.config.limits.mx': 'unknown_field',
      'evaluator.config.limits.max': 'too_big',
      'evaluator.config.extra': 'unknown_field',
    });
    expect(issues.find((i) => i.field === 'evaluator.config.limits.max')?.message).toBe('must be <= 10');
    expect(registry.validateConfig('acme.hook', {})).toEqual([{ field: 'evaluator.config.url', code: 'invalid_type', message: 'is required' }]);
  });
});
