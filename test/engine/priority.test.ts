import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';
import type { Decision } from '../../src/model/index.js';
import { control, toolStep } from './helpers.js';

const registry = createDefaultRegistry();

/** A control with `decision` that matches the step when `hits` is true. */
function ctl(name: string, decision: Decision, hits: boolean, enabled = true) {
  return control(name, {
    enabled,
    selector: { path: 'input' },
    evaluator: { name: 'list', config: { values: [hits ? 'go' : 'never'] } },
    action: decision === 'steer' ? { decision, steering_context: { message: `fix from ${name}` } } : { decision },
  });
}

type Spec = [Decision, boolean] | [Decision, boolean, boolean];
type Case = [label: string, controls: Spec[], decision: 'allow' | 'deny' | 'steer' | 'ask', steerFrom: string | null];

const cases: Case[] = [
  ['nothing matches', [['deny', false], ['steer', false]], 'allow', null],
  ['no controls', [], 'allow', null],
  ['deny alone', [['deny', true]], 'deny', null],
  ['deny beats allow', [['allow', true], ['deny', true]], 'deny', null],
  ['deny beats steer', [['steer', true], ['deny', true]], 'deny', null],
  ['deny beats steer, warn, log, allow', [['steer', true], ['warn', true], ['log', true], ['allow', true], ['deny', true]], 'deny', null],
  ['steer without deny', [['steer', true], ['deny', false]], 'steer', 'c0'],
  ['first steer wins by order', [['allow', true], ['steer', true], ['steer', true]], 'steer', 'c1'],
  ['steer beats allow', [['allow', true], ['steer', true]], 'steer', 'c1'],
  ['allow has no effect', [['allow', true]], 'allow', null],
  ['warn never blocks', [['warn', true]], 'allow', null],
  ['log never blocks', [['log', true]], 'allow', null],
  ['warn + log + allow never block', [['warn', true], ['log', true], ['allow', true]], 'allow', null],
  ['disabled deny never runs', [['deny', true, false]], 'allow', null],
  ['disabled steer never runs', [['steer', true, false], ['warn', true]], 'allow', null],
  ['disabled deny, enabled steer', [['deny', true, false], ['steer', true]], 'steer', 'c1'],
  ['ask alone', [['ask', true]], 'ask', null],
  ['ask beats allow, warn and log', [['allow', true], ['warn', true], ['log', true], ['ask', true]], 'ask', null],
  ['steer beats ask', [['ask', true], ['steer', true]], 'steer', 'c1'],
  ['deny beats ask', [['ask', true], ['deny', true]], 'deny', null],
  ['ask that does not match', [['ask', false], ['allow', true]], 'allow', null],
  ['disabled ask never runs', [['ask', true, false]], 'allow', null],
];

describe('decision priority', () => {
  it.each(cases)('%s', async (_label, specs, decision, steerFrom) => {
    const controls = specs.map(([d, hits, enabled], i) => ctl(`c${i}`, d, hits, enabled ?? true));
    const set = compileControls(controls, registry);
    const outcome = evaluateStep(set, toolStep('t', 'go'), 'pre');
    // Only synchronous evaluators: the result is a plain object, not a promise.
    expect(outcome).not.toBeInstanceOf(Promise);
    const { result } = await outcome;
    expect(result.decision).toBe(decision);
    expect(result.is_safe).toBe(decision !== 'deny' && decision !== 'ask');
    expect(result.steering_context).toEqual(steerFrom ? { message: `fix from ${steerFrom}` } : null);
    const enabledCount = specs.filter((s) => s[2] !== false).length;
    expect(result.matches.length + result.non_matches.length).toBe(enabledCount);
    const disabledNames = specs.flatMap((s, i) => (s[2] === false ? [`c${i}`] : []));
    for (const m of [...result.matches, ...result.non_matches]) expect(disabledNames).not.toContain(m.control_name);
  });

  it('reports matches with action, result and steering context', async () => {
    const set = compileControls([ctl('s', 'steer', true), ctl('w', 'warn', true), ctl('n', 'deny', false)], registry);
    const { result } = await evaluateStep(set, toolStep('t', 'go'), 'pre');
    expect(result.matches.map((m) => [m.control_name, m.action])).toEqual([
      ['s', 'steer'],
      ['w', 'warn'],
    ]);
    expect(result.matches[0]!.steering_context).toEqual({ message: 'fix from s' });
    expect(result.matches[1]!.steering_context).toBeUndefined();
    // What matched is masked by default (two characters: nothing of it is shown).
    expect(result.matches[0]!.result).toEqual({ matched: true, confidence: 1, message: 'list matched "…"', metadata: null });
    expect(result.non_matches.map((m) => m.control_name)).toEqual(['n']);
    expect(result.confidence).toBe(1);
  });

  it('controls with null data are left out, disabled are counted as inactive', () => {
    const set = compileControls([{ control_id: 99, name: 'empty', data: null }, ctl('off', 'deny', true, false)], registry);
    expect(set.controls).toHaveLength(0);
    expect(set.inactive).toBe(2);
    expect(set.skipped).toHaveLength(0);
  });

  it('collects executions with excerpts for matched controls', async () => {
    const set = compileControls([ctl('hit', 'deny', true), ctl('miss', 'log', false)], registry);
    const { executions } = await evaluateStep(set, toolStep('t', 'go'), 'pre', { collectExecutions: true });
    expect(executions).toHaveLength(2);
    expect(executions![0]).toMatchObject({
      control_name: 'hit',
      action: 'deny',
      matched: true,
      excerpt: '…',
      evaluator_name: 'list',
      selector_path: 'input',
      error_message: null,
    });
    expect(executions![0]!.duration_ms).toBeGreaterThanOrEqual(0);
    expect(executions![1]).toMatchObject({ control_name: 'miss', matched: false, excerpt: null });
  });

  it('leaves excerpts out when not asked for, and records the rest the same', async () => {
    const set = compileControls([ctl('hit', 'deny', true), ctl('miss', 'log', false)], registry);
    const { result, executions } = await evaluateStep(set, toolStep('t', 'go'), 'pre', { collectExecutions: true, excerpts: false });
    expect(result.decision).toBe('deny');
    expect(executions).toHaveLength(2);
    expect(executions![0]).toMatchObject({ control_name: 'hit', matched: true, evaluator_name: 'list', error_message: null });
    expect(executions![0]!.excerpt).toBeUndefined();
    expect(executions![0]!.duration_ms).toBeGreaterThanOrEqual(0);
    expect(executions![1]).toMatchObject({ control_name: 'miss', matched: false });
    expect(executions![1]!.excerpt).toBeUndefined();
  });

  it('truncates excerpts to 200 characters', async () => {
    const set = compileControls(
      [control('long', { selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern: 'a' } }, action: { decision: 'log' } })],
      registry,
    );
    const { executions } = await evaluateStep(set, toolStep('t', 'a'.repeat(1000)), 'pre', { collectExecutions: true });
    expect(executions![0]!.excerpt).toHaveLength(200);
  });
});
