import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';
import { regexControl, toolStep } from './helpers.js';

describe('pathological patterns', () => {
  it('(x+x+)+y against 100 KB of x completes without a match', async () => {
    // A backtracking engine needs exponential time here; RE2 is linear, so this returns.
    const set = compileControls([regexControl('evil', '(x+x+)+y')], createDefaultRegistry());
    const { result } = await evaluateStep(set, toolStep('t', 'x'.repeat(100 * 1024)), 'pre');
    expect(result.decision).toBe('allow');
    expect(result.non_matches).toHaveLength(1);
  });

  it('still finds a match at the end of 100 KB', async () => {
    const set = compileControls([regexControl('evil', '(x+x+)+y')], createDefaultRegistry());
    const { result } = await evaluateStep(set, toolStep('t', `${'x'.repeat(100 * 1024)}y`), 'pre');
    expect(result.decision).toBe('deny');
  });
});
