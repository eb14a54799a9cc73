import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, type EvaluationOutcome } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';
import type { Decision } from '../../src/model/index.js';
import { control, toolStep } from './helpers.js';

const registry = createDefaultRegistry();
const throwing = (): never => {
  throw new Error('boom');
};
const failingRegistry = createDefaultRegistry({
  extra: [
    { name: 'test.throws', description: 'throws', configSchema: { type: 'object', additionalProperties: false }, compile: () => throwing },
    {
      name: 'test.rejects',
      description: 'rejects',
      configSchema: { type: 'object', additionalProperties: false },
      compile: () => async () => throwing(),
    },
  ],
});

/** A control with `decision` in `mode` that matches the step when `hits` is true. */
function ctl(name: string, decision: Decision, hits: boolean, mode: 'enforce' | 'shadow') {
  return control(name, {
    mode,
    selector: { path: 'input' },
    evaluator: { name: 'list', config: { values: [hits ? 'go' : 'never'] } },
    action: decision === 'steer' ? { decision, steering_context: { message: `fix from ${name}` } } : { decision },
  });
}

async function run(controls: ReturnType<typeof ctl>[], collectExecutions = false): Promise<EvaluationOutcome> {
  return evaluateStep(compileControls(controls, registry), toolStep('t', 'go'), 'pre', { collectExecutions });
}

describe('shadow controls', () => {
  type Case = [label: string, controls: Array<[Decision, boolean, 'enforce' | 'shadow']>, decision: 'allow' | 'deny' | 'steer', shadow: string[], steerFrom: string | null];
  const cases: Case[] = [
    ['a matching shadow deny leaves the step allowed', [['deny', true, 'shadow']], 'allow', ['c0'], null],
    ['a matching shadow steer gives no steering context', [['steer', true, 'shadow']], 'allow', ['c0'], null],
    ['an enforced deny still decides beside a shadow steer', [['steer', true, 'shadow'], ['deny', true, 'enforce']], 'deny', ['c0'], null],
    ['the enforced steer decides, not the earlier shadow steer', [['steer', true, 'shadow'], ['steer', true, 'enforce']], 'steer', ['c0'], 'c1'],
    ['a shadow control that does not match is an ordinary non-match', [['deny', false, 'shadow']], 'allow', [], null],
  ];

  it.each(cases)('%s', async (_label, specs, decision, shadow, steerFrom) => {
    const { result } = await run(specs.map(([d, hits, mode], i) => ctl(`c${i}`, d, hits, mode)));
    expect(result.decision).toBe(decision);
    expect(result.is_safe).toBe(decision !== 'deny');
    expect(result.shadow_matches.map((m) => m.control_name)).toEqual(shadow);
    // A shadow match is never in `matches`: nothing that reads matches can act on it.
    expect(result.matches.some((m) => shadow.includes(m.control_name))).toBe(false);
    expect(result.steering_context?.message ?? null).toBe(steerFrom === null ? null : `fix from ${steerFrom}`);
  });

  it('gives shadow matches the shape of matches, steering context included', async () => {
    const { result } = await run([ctl('s', 'steer', true, 'shadow')]);
    expect(result.shadow_matches).toEqual([
      {
        control_id: expect.any(Number),
        control_name: 's',
        action: 'steer',
        result: { matched: true, confidence: 1, message: expect.any(String), metadata: null },
        steering_context: { message: 'fix from s' },
      },
    ]);
    expect(result.steering_context).toBeNull();
  });

  it('puts the same control in matches when enforced and in shadow_matches when shadowed', async () => {
    const enforced = await run([ctl('same', 'deny', true, 'enforce')]);
    const shadowed = await run([ctl('same', 'deny', true, 'shadow')]);
    expect(enforced.result.decision).toBe('deny');
    expect(shadowed.result.decision).toBe('allow');
    expect(shadowed.result.shadow_matches.map(({ control_id: _id, ...m }) => m)).toEqual(
      enforced.result.matches.map(({ control_id: _id, ...m }) => m),
    );
  });

  it('marks each execution with its control mode', async () => {
    const { executions } = await run([ctl('e', 'deny', false, 'enforce'), ctl('s', 'deny', true, 'shadow')], true);
    expect(executions?.map((x) => [x.control_name, x.mode, x.matched])).toEqual([
      ['e', 'enforce', false],
      ['s', 'shadow', true],
    ]);
  });

  it('treats data without a mode as enforced', async () => {
    const plain = control('plain', { selector: { path: 'input' }, evaluator: { name: 'list', config: { values: ['go'] } }, action: { decision: 'deny' } });
    expect(plain.data?.mode).toBeUndefined();
    const { result } = await evaluateStep(compileControls([plain], registry), toolStep('t', 'go'), 'pre');
    expect(result.decision).toBe('deny');
    expect(result.shadow_matches).toEqual([]);
  });

  it.each([
    ['synchronously', 'test.throws'],
    ['asynchronously', 'test.rejects'],
  ])('a shadow deny that fails %s (on_error deny) is a shadow match, never a deny', async (_how, evaluator) => {
    const failing = control(`boom-${evaluator}`, {
      mode: 'shadow',
      selector: { path: 'input' },
      evaluator: { name: evaluator, config: { on_error: 'deny' } },
      action: { decision: 'deny' },
    });
    const { result } = await evaluateStep(compileControls([failing], failingRegistry), toolStep('t', 'go'), 'pre');
    expect(result.decision).toBe('allow');
    expect(result.is_safe).toBe(true);
    expect(result.matches).toEqual([]);
    expect(result.shadow_matches.map((m) => m.error)).toEqual([expect.stringContaining('boom')]);
  });
});
