import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import {
  createDefaultRegistry,
  createRegistryFromEnv,
  evaluatorPluginSpecs,
  loadEvaluatorPlugins,
} from '../../src/evaluators/index.js';
import { control, toolStep } from '../engine/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'guard-plugins-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, source: string): string {
  writeFileSync(join(dir, name), source);
  return `./${name}`;
}

const valid = write(
  'shouting.mjs',
  `export default [{
    name: 'acme.shouting',
    description: 'matches text that is mostly upper case',
    configSchema: { type: 'object', properties: { ratio: { type: 'number', minimum: 0, maximum: 1 } }, required: ['ratio'], additionalProperties: false },
    compile(config) {
      return (value) => {
        const s = String(value);
        const letters = s.replace(/[^A-Za-z]/g, '');
        const upper = s.replace(/[^A-Z]/g, '').length;
        return { matched: letters.length > 0 && upper / letters.length >= config.ratio, confidence: 1, message: 'shouting' };
      };
    },
  }];`,
);

describe('loadEvaluatorPlugins', () => {
  it('loads a plugin file, lists it, and the engine runs it', async () => {
    const registry = createDefaultRegistry();
    const added = await loadEvaluatorPlugins(registry, [valid], dir);
    expect(added).toEqual(['acme.shouting']);
    expect(registry.list().map((e) => e.name)).toContain('acme.shouting');
    expect(registry.validateConfig('acme.shouting', { ratio: 2 })[0]!.field).toBe('evaluator.config.ratio');

    const set = compileControls(
      [control('no-shouting', { selector: { path: 'input' }, evaluator: { name: 'acme.shouting', config: { ratio: 0.8 } }, action: { decision: 'deny' } })],
      registry,
    );
    expect((await evaluateStep(set, toolStep('t', 'STOP THAT'), 'pre')).result.decision).toBe('deny');
    expect((await evaluateStep(set, toolStep('t', 'please stop'), 'pre')).result.decision).toBe('allow');
  });

  it('accepts `export const evaluators` and absolute paths', async () => {
    const file = write(
      'named.mjs',
      `export const evaluators = [{ name: 'acme.never', description: 'never matches', configSchema: { type: 'object' }, compile: () => () => ({ matched: false, confidence: 1 }) }];`,
    );
    const registry = createDefaultRegistry();
    expect(await loadEvaluatorPlugins(registry, [join(dir, file)], '/')).toEqual(['acme.never']);
  });

  type Bad = [label: string, source: string, error: RegExp];
  const bad: Bad[] = [
    ['no export', `export const x = 1;`, /exports no evaluators/],
    ['missing compile', `export default [{ name: 'a.b', description: 'd', configSchema: { type: 'object' } }];`, /"a\.b" needs a "compile\(config\)" function/],
    ['missing description', `export default [{ name: 'a.b', configSchema: { type: 'object' }, compile() {} }];`, /needs a "description"/],
    ['schema not an object schema', `export default [{ name: 'a.b', description: 'd', configSchema: { type: 'string' }, compile() {} }];`, /configSchema.type must be "object"/],
    ['schema with a typo keyword', `export default [{ name: 'a.b', description: 'd', configSchema: { type: 'object', properties: { n: { type: 'integer', maximun: 3 } } }, compile() {} }];`, /"a\.b": configSchema is not a valid JSON Schema: .*maximun/],
    ['schema pattern RE2 refuses', `export default [{ name: 'a.b', description: 'd', configSchema: { type: 'object', properties: { n: { type: 'string', pattern: '(a)\\\\1' } } }, compile() {} }];`, /"a\.b": configSchema is not a valid JSON Schema: .*invalid regular expression/],
    ['bad name', `export default [{ name: 'has space', description: 'd', configSchema: { type: 'object' }, compile() {} }];`, /needs a "name"/],
    ['name taken', `export default [{ name: 'regex', description: 'd', configSchema: { type: 'object' }, compile() {} }];`, /"regex" is already registered/],
    ['not an array', `export default 42;`, /must be an array/],
    ['syntax error', `export default [`, /cannot load evaluator plugin/],
  ];
  it.each(bad)('rejects a plugin with %s, naming the file', async (label, source, error) => {
    const file = write(`${label.replace(/\W+/g, '-')}.mjs`, source);
    const attempt = loadEvaluatorPlugins(createDefaultRegistry(), [file], dir);
    await expect(attempt).rejects.toThrow(error);
    await expect(attempt).rejects.toThrow(join(dir, file));
  });

  it('rejects a missing file with a clear error', async () => {
    await expect(loadEvaluatorPlugins(createDefaultRegistry(), ['./nope.mjs'], dir)).rejects.toThrow(
      /cannot load evaluator plugin "\.\/nope\.mjs"/,
    );
  });
});

describe('evaluatorPluginSpecs', () => {
  it.each([
    [{}, []],
    [{ GUARD_EVALUATORS: './a.js, ./b.js ,' }, ['./a.js', './b.js']],
    [{ GUARD_AI_VENDOR_ENABLED: 'true' }, ['ai_vendor.scorer']],
    [{ GUARD_AI_VENDOR_ENABLED: 'false' }, []],
    [{ GUARD_EVALUATORS: 'ai_vendor.scorer', GUARD_AI_VENDOR_ENABLED: 'true' }, ['ai_vendor.scorer']],
  ] as Array<[Record<string, string>, string[]]>)('%j -> %j', (env, specs) => {
    expect(evaluatorPluginSpecs(env)).toEqual(specs);
  });

  it('the vendor scorer is listed only when enabled and VENDOR_API_KEY is set', async () => {
    const names = async (env: Record<string, string>) => {
      const registry = createDefaultRegistry();
      await loadEvaluatorPlugins(registry, evaluatorPluginSpecs(env), dir, { env });
      return registry.names();
    };
    expect(await names({ VENDOR_API_KEY: 'k' })).toEqual(['regex', 'list', 'json', 'sql', 'pii', 'secrets', 'rate', 'budget', 'repeat', 'prompt_injection']);
    expect(await names({ GUARD_AI_VENDOR_ENABLED: 'true' })).toEqual(['regex', 'list', 'json', 'sql', 'pii', 'secrets', 'rate', 'budget', 'repeat', 'prompt_injection']);
    expect(await names({ GUARD_AI_VENDOR_ENABLED: 'true', VENDOR_API_KEY: 'k' })).toEqual(['regex', 'list', 'json', 'sql', 'pii', 'secrets', 'rate', 'budget', 'repeat', 'prompt_injection', 'ai_vendor.scorer']);
    expect(await names({ GUARD_EVALUATORS: 'ai_vendor.scorer', VENDOR_API_KEY: 'k' })).toEqual(['regex', 'list', 'json', 'sql', 'pii', 'secrets', 'rate', 'budget', 'repeat', 'prompt_injection', 'ai_vendor.scorer']);
  });

  it('createRegistryFromEnv loads GUARD_EVALUATORS relative to baseDir', async () => {
    const registry = await createRegistryFromEnv({ GUARD_EVALUATORS: valid }, dir);
    expect(registry.names()).toEqual(['regex', 'list', 'json', 'sql', 'pii', 'secrets', 'rate', 'budget', 'repeat', 'prompt_injection', 'acme.shouting']);
  });
});
