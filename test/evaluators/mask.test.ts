import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { maskFoundIn, maskMatch, maskQuotedEchoes } from '../../src/evaluators/mask.js';
import type { EvaluatorDefinition } from '../../src/evaluators/types.js';
import { control, toolStep } from '../engine/helpers.js';

describe('maskMatch', () => {
  it.each([
    ['4111 1111 1111 1111', '4111…1111'],
    ['AKIAIOSFODNN7EXAMPLE', 'AKIA…MPLE'],
    ['production', 'p…n'],
    ['hunter2', '…'],
    ['', '…'],
    ['😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀', '😀😀😀😀…😀😀😀😀'], // characters, not UTF-16 units
    [`ab${'x'.repeat(100)}yz`, 'abxx…xxyz'],
  ])('%j -> %j', (text, masked) => {
    expect(maskMatch(text)).toBe(masked);
  });

  it('never shows more than half of a text', () => {
    for (let n = 0; n < 40; n++) {
      const text = 'a'.repeat(n);
      expect(maskMatch(text).replace('…', '').length).toBeLessThanOrEqual(n / 2);
    }
  });

  it('masks every occurrence, longer found texts first', () => {
    expect(maskFoundIn('k=4111 1111 1111 1111, again 4111 1111 1111 1111', ['4111 1111 1111 1111'])).toBe('k=4111…1111, again 4111…1111');
    expect(maskFoundIn('secret-token-value', ['token', 'secret-token-value'])).toBe('secr…alue');
  });

  it('masks quoted parts of a message that echo the value', () => {
    expect(maskQuotedEchoes('found "sk_live_1234567890" in "input"', 'key sk_live_1234567890')).toBe('found "sk_l…7890" in "input"');
  });
});

/** A plugin that quotes what it found in its message and metadata instead of reporting it. */
const careless: EvaluatorDefinition = {
  name: 'careless',
  description: 'echoes the value',
  configSchema: { type: 'object' },
  compile: () => (value) => ({ matched: true, confidence: 1, message: `saw "${String(value)}"`, metadata: { value: String(value) } }),
};
/** A plugin that reports what it found in metadata too. */
const reporting: EvaluatorDefinition = {
  name: 'reporting',
  description: 'reports what it found',
  configSchema: { type: 'object' },
  compile: () => (value) => ({ matched: true, confidence: 1, message: 'token', metadata: { token: String(value) }, found: [String(value)] }),
};

describe('the engine masks every evaluator', () => {
  const registry = createDefaultRegistry({ extra: [careless, reporting] });
  const secret = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';

  it('catches a message that quotes the value; masks found texts in the metadata and the excerpt', async () => {
    const set = compileControls(
      [
        control('careless', { selector: { path: 'input' }, evaluator: { name: 'careless' }, action: { decision: 'deny' } }),
        control('reporting', { selector: { path: 'input' }, evaluator: { name: 'reporting' }, action: { decision: 'log' } }),
      ],
      registry,
    );
    const { result, executions } = await evaluateStep(set, toolStep('t', secret), 'pre', { collectExecutions: true });
    const [a, b] = result.matches;
    expect(a!.result).toMatchObject({ message: 'saw "ghp_…6789"', metadata: { value: 'ghp_…6789' } });
    expect(b!.result).toMatchObject({ message: 'token "ghp_…6789"', metadata: { token: 'ghp_…6789' } });
    expect(JSON.stringify(result)).not.toContain(secret.slice(4, 20));
    // careless reported nothing found: its excerpt shows none of the value.
    expect(executions!.map((x) => x.excerpt)).toEqual(['ghp_…6789', 'ghp_…6789']);
  });

  it('shows everything for reveal_match, in trees too', async () => {
    const set = compileControls(
      [
        control('shown', {
          reveal_match: true,
          condition: { and: [{ selector: { path: 'input' }, evaluator: { name: 'reporting' } }] },
          action: { decision: 'log' },
        }),
      ],
      registry,
    );
    const { result, executions } = await evaluateStep(set, toolStep('t', secret), 'pre', { collectExecutions: true });
    expect(result.matches[0]!.result.message).toBe(`token "${secret}"`);
    expect(executions![0]!.excerpt).toBe(secret);
  });

  it('masks in condition trees by default', async () => {
    const set = compileControls(
      [control('tree', { condition: { and: [{ selector: { path: 'input' }, evaluator: { name: 'reporting' } }, { selector: { path: 'input' }, evaluator: { name: 'careless' } }] }, action: { decision: 'log' } })],
      registry,
    );
    const { result, executions } = await evaluateStep(set, toolStep('t', secret), 'pre', { collectExecutions: true });
    expect(result.matches[0]!.result.message).toBe('token "ghp_…6789"; saw "ghp_…6789"');
    expect(executions![0]!.excerpt).toBe('ghp_…6789');
  });
});
