import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, validateControlData } from '../../src/engine/index.js';
import { createDefaultRegistry, type EvaluatorDefinition } from '../../src/evaluators/index.js';
import type { Condition } from '../../src/model/index.js';
import { control, toolStep } from './helpers.js';

let calls: string[] = [];
const spy: EvaluatorDefinition = {
  name: 'test.spy',
  description: 'records calls; matches when the value equals config.equals',
  configSchema: { type: 'object', properties: { equals: { type: 'string' } }, required: ['equals'] },
  compile: (config) => (value) => {
    calls.push(String(config.equals));
    return { matched: value === config.equals, confidence: 1, message: `equals ${String(config.equals)}` };
  },
};
const boom: EvaluatorDefinition = {
  name: 'test.throws',
  description: 'throws',
  configSchema: { type: 'object' },
  compile: () => () => {
    throw new Error('leaf failed');
  },
};
const later: EvaluatorDefinition = {
  name: 'test.later',
  description: 'async equals',
  configSchema: { type: 'object', properties: { equals: { type: 'string' } } },
  compile: (config) => async (value) => ({ matched: value === config.equals, confidence: 0.5 }),
};
const registry = createDefaultRegistry({ extra: [spy, boom, later] });

const leaf = (path: string, equals: string): Condition => ({
  selector: { path },
  evaluator: { name: 'test.spy', config: { equals } },
});
const T = leaf('input.a', 'yes'); // true for the step below
const F = leaf('input.a', 'no'); // false

const step = toolStep('t', { a: 'yes', b: 'other' });

type Case = [label: string, condition: Condition, matched: boolean, called: number];

const cases: Case[] = [
  ['leaf true', T, true, 1],
  ['leaf false', F, false, 1],
  ['and: all true', { and: [T, T, T] }, true, 3],
  ['and: short-circuits at first false', { and: [T, F, T] }, false, 2],
  ['or: first true short-circuits', { or: [T, F] }, true, 1],
  ['or: all false', { or: [F, F] }, false, 2],
  ['or: later true', { or: [F, F, T] }, true, 3],
  ['not true', { not: T }, false, 1],
  ['not false', { not: F }, true, 1],
  ['nested: and(or(F,T), not(F))', { and: [{ or: [F, T] }, { not: F }] }, true, 3],
  ['nested: or(and(T,F), not(T))', { or: [{ and: [T, F] }, { not: T }] }, false, 3],
  ['not over a missing field matches', { not: leaf('input.missing', 'x') }, true, 0],
];

describe('condition trees', () => {
  it.each(cases)('%s', async (_label, condition, matched, called) => {
    calls = [];
    const set = compileControls([control('c', { condition, action: { decision: 'deny' } })], registry);
    expect(set.skipped).toEqual([]);
    const { result } = await evaluateStep(set, step, 'pre');
    expect(result.decision).toBe(matched ? 'deny' : 'allow');
    expect(calls).toHaveLength(called);
  });

  it('an error in a leaf is an error of the control (deny fails closed)', async () => {
    const condition: Condition = { and: [T, { selector: { path: 'input' }, evaluator: { name: 'test.throws', config: {} } }] };
    const set = compileControls([control('c', { condition, action: { decision: 'deny' } })], registry);
    const { result } = await evaluateStep(set, step, 'pre');
    expect(result.decision).toBe('deny');
    expect(result.matches[0]!.error).toBe('leaf failed');
  });

  it("a leaf's on_error applies to its failure", async () => {
    const condition: Condition = {
      or: [F, { selector: { path: 'input' }, evaluator: { name: 'test.throws', config: { on_error: 'allow' } } }],
    };
    const set = compileControls([control('c', { condition, action: { decision: 'deny' } })], registry);
    const { result } = await evaluateStep(set, step, 'pre');
    expect(result.decision).toBe('allow');
    expect(result.errors[0]!.error).toBe('leaf failed');
  });

  it('async leaves keep short-circuit order', async () => {
    calls = [];
    const asyncLeaf = (equals: string): Condition => ({ selector: { path: 'input.a' }, evaluator: { name: 'test.later', config: { equals } } });
    const condition: Condition = { and: [asyncLeaf('yes'), T, { or: [asyncLeaf('no'), T] }] };
    const set = compileControls([control('c', { condition, action: { decision: 'deny' } })], registry);
    const pending = evaluateStep(set, step, 'pre', { collectExecutions: true });
    expect(pending).toBeInstanceOf(Promise);
    const { result, executions } = await pending;
    expect(result.decision).toBe('deny');
    expect(calls).toEqual(['yes', 'yes']);
    expect(result.confidence).toBe(0.5); // and: the lowest confidence of its matched leaves
    // test.later reports nothing in `found`: not knowing what matched, the excerpt shows none of the value.
    expect(executions![0]).toMatchObject({ matched: true, excerpt: '…', evaluator_name: 'test.later', selector_path: 'input.a' });
  });

  it('rejects a tree deeper than the limit with a path', () => {
    let deep: Condition = T;
    for (let i = 0; i < 9; i++) deep = { not: deep };
    const outcome = validateControlData({ condition: deep, action: { decision: 'deny' } }, registry);
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.issues[0]).toMatchObject({ field: 'condition' });
    expect(outcome.issues[0]!.message).toMatch(/10 levels deep; the limit is 8/);
    // compiling data that skipped validation also refuses it, without throwing
    const set = compileControls([{ control_id: 1, name: 'deep', data: { enabled: true, execution: 'server', scope: {}, condition: deep, action: { decision: 'deny' } } }], registry);
    expect(set.controls).toHaveLength(0);
    expect(set.skipped[0]!.issues[0]!.field).toBe('condition');
  });

  it('validates each leaf config with its path in the tree', () => {
    const outcome = validateControlData(
      {
        condition: {
          and: [T, { not: { selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern: '(?<=x)y' } } } }],
        },
        action: { decision: 'deny' },
      },
      registry,
    );
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.issues.map((i) => i.field)).toEqual(['condition.and[1].not.evaluator.config.pattern']);
  });
});
