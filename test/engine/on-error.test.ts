import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry, type EvaluatorDefinition } from '../../src/evaluators/index.js';
import type { Decision, OnError } from '../../src/model/index.js';
import { control, toolStep } from './helpers.js';

/** Evaluators that fail on purpose: synchronously, by rejection, or succeed asynchronously. */
const failing: EvaluatorDefinition[] = [
  {
    name: 'test.throws',
    description: 'throws',
    configSchema: { type: 'object', additionalProperties: false },
    compile: () => () => {
      throw new Error('boom');
    },
  },
  {
    name: 'test.rejects',
    description: 'rejects',
    configSchema: { type: 'object', additionalProperties: false },
    compile: () => async () => {
      throw new Error('async boom');
    },
  },
  {
    name: 'test.async-match',
    description: 'matches later',
    configSchema: { type: 'object', additionalProperties: false },
    compile: () => async (value) => ({ matched: value === 'go', confidence: 0.7, message: 'later' }),
  },
];

const registry = createDefaultRegistry({ extra: failing });

function ctl(evaluator: string, decision: Decision, onError?: OnError) {
  return control(`${evaluator}-${decision}-${onError ?? 'default'}`, {
    selector: { path: 'input' },
    evaluator: { name: evaluator, config: onError ? { on_error: onError } : {} },
    action: decision === 'steer' ? { decision, steering_context: { message: 'retry' } } : { decision },
  });
}

type Case = [evaluator: string, decision: Decision, onError: OnError | undefined, fires: boolean, result: 'allow' | 'deny' | 'steer'];

const cases: Case[] = [
  // defaults: deny/steer fail closed, the rest fail open
  ['test.throws', 'deny', undefined, true, 'deny'],
  ['test.throws', 'steer', undefined, true, 'steer'],
  ['test.throws', 'warn', undefined, false, 'allow'],
  ['test.throws', 'log', undefined, false, 'allow'],
  ['test.throws', 'allow', undefined, false, 'allow'],
  // explicit
  ['test.throws', 'deny', 'allow', false, 'allow'],
  ['test.throws', 'deny', 'deny', true, 'deny'],
  ['test.throws', 'warn', 'deny', true, 'allow'],
  ['test.rejects', 'deny', undefined, true, 'deny'],
  ['test.rejects', 'deny', 'allow', false, 'allow'],
  ['test.rejects', 'steer', 'allow', false, 'allow'],
  ['test.rejects', 'steer', 'deny', true, 'steer'],
];

describe('on_error', () => {
  it.each(cases)('%s %s on_error=%s -> fires %s, decision %s', async (evaluator, decision, onError, fires, expected) => {
    const set = compileControls([ctl(evaluator, decision, onError)], registry);
    const { result } = await evaluateStep(set, toolStep('t', 'go'), 'pre');
    expect(result.decision).toBe(expected);
    const message = evaluator === 'test.throws' ? 'boom' : 'async boom';
    if (fires) {
      expect(result.matches).toHaveLength(1);
      expect(result.matches[0]!.error).toBe(message);
      expect(result.matches[0]!.result.matched).toBe(true);
      expect(result.errors).toHaveLength(0);
    } else {
      expect(result.matches).toHaveLength(0);
      expect(result.errors).toHaveLength(1);
      expect(result.errors[0]!.error).toBe(message);
      expect(result.errors[0]!.result.matched).toBe(false);
    }
    expect(result.non_matches).toHaveLength(0);
  });

  it('returns a promise only when an evaluator is asynchronous', async () => {
    const set = compileControls([ctl('test.async-match', 'deny'), ctl('test.throws', 'log')], registry);
    const pending = evaluateStep(set, toolStep('t', 'go'), 'pre');
    expect(pending).toBeInstanceOf(Promise);
    const { result } = await pending;
    expect(result.decision).toBe('deny');
    expect(result.confidence).toBe(0.7);
    // order of the lists follows control order even with async evaluators
    expect(result.matches.map((m) => m.control_name)).toEqual(['test.async-match-deny-default']);
    expect(result.errors.map((m) => m.control_name)).toEqual(['test.throws-log-default']);
  });

  it('records the error text in executions', async () => {
    const set = compileControls([ctl('test.rejects', 'deny', 'allow')], registry);
    const { executions } = await evaluateStep(set, toolStep('t', 'go'), 'pre', { collectExecutions: true });
    expect(executions![0]).toMatchObject({ matched: false, error_message: 'async boom', excerpt: null });
  });

  it('an evaluator is not called when the selector selects nothing', async () => {
    const set = compileControls(
      [control('x', { selector: { path: 'input.absent' }, evaluator: { name: 'test.throws', config: {} }, action: { decision: 'deny' } })],
      registry,
    );
    const { result } = await evaluateStep(set, toolStep('t', { other: 1 }), 'pre');
    expect(result.decision).toBe('allow');
    expect(result.errors).toHaveLength(0);
    expect(result.non_matches).toHaveLength(1);
  });
});
