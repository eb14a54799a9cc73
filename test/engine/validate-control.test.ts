import { describe, expect, it } from 'vitest';
import { compileControls, validateControlData, validateControlDocument } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';

const registry = createDefaultRegistry();

const base = {
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '(?i)drop' } },
  action: { decision: 'deny' },
};

type Case = [label: string, data: unknown, field: string, message: RegExp];

const bad: Case[] = [
  ['bad regex', { ...base, evaluator: { name: 'regex', config: { pattern: 'a(' } } }, 'evaluator.config.pattern', /invalid regular expression/],
  ['backtracking-only regex', { ...base, evaluator: { name: 'regex', config: { pattern: '(a)\\1' } } }, 'evaluator.config.pattern', /invalid/],
  ['empty pattern', { ...base, evaluator: { name: 'regex', config: { pattern: '' } } }, 'evaluator.config.pattern', /empty/],
  ['unknown evaluator', { ...base, evaluator: { name: 'regexx', config: {} } }, 'evaluator.name', /unknown evaluator "regexx"; known: "regex", "list", "json", "sql", "pii", "secrets", "rate", "budget"/],
  ['unknown config key', { ...base, evaluator: { name: 'regex', config: { pattern: 'x', flags: 'i' } } }, 'evaluator.config.flags', /unknown field/],
  ['config of wrong type', { ...base, evaluator: { name: 'list', config: { values: 'a' } } }, 'evaluator.config.values', /array/],
  ['empty list', { ...base, evaluator: { name: 'list', config: { values: [] } } }, 'evaluator.config.values', /at least one/],
  ['bad match_mode', { ...base, evaluator: { name: 'list', config: { values: ['a'], match_mode: 'regex' } } }, 'evaluator.config.match_mode', /./],
  ['bad on_error', { ...base, evaluator: { name: 'regex', config: { pattern: 'x', on_error: 'ignore' } } }, 'evaluator.config.on_error', /allow" or "deny/],
  ['bad step_name_regex', { ...base, scope: { step_name_regex: '[' } }, 'scope.step_name_regex', /invalid regular expression/],
  ['empty step_names', { ...base, scope: { step_names: [] } }, 'scope.step_names', /empty list/],
  ['bad stage', { ...base, scope: { stages: ['during'] } }, 'scope.stages[0]', /./],
  ['bad selector', { ...base, selector: { path: 'inputs.x' } }, 'selector.path', /path must be/],
  ['unknown top-level key', { ...base, extra: 1 }, 'extra', /unknown field/],
  ['steer without context', { ...base, action: { decision: 'steer' } }, 'action.steering_context', /steer/],
  ['no evaluator', { selector: base.selector, action: base.action }, 'evaluator', /required/],
];

describe('validateControlData', () => {
  it.each(bad)('rejects %s', (_label, data, field, message) => {
    const outcome = validateControlData(data, registry);
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    const issue = outcome.issues.find((i) => i.field === field);
    expect(issue, JSON.stringify(outcome.issues)).toBeDefined();
    expect(issue!.message).toMatch(message);
  });

  it('accepts valid data and fills defaults', () => {
    const outcome = validateControlData({ ...base, evaluator: { name: 'regex', config: { pattern: 'x', on_error: 'allow' } } }, registry);
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.data.enabled).toBe(true);
    expect(outcome.data.execution).toBe('server');
  });

  it('validates a kind: Control document the same way', () => {
    const ok = validateControlDocument({ kind: 'Control', name: 'no-drop', ...base }, registry);
    expect(ok.ok).toBe(true);
    if (ok.ok) expect(ok.data).not.toHaveProperty('kind');
    const bad = validateControlDocument(
      { kind: 'Control', name: 'no-drop', ...base, evaluator: { name: 'regex', config: { pattern: '*' } } },
      registry,
    );
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.issues[0]!.field).toBe('evaluator.config.pattern');
  });
});

describe('compileControls', () => {
  it('skips (never throws on) a control that no longer compiles and keeps the rest', () => {
    const good = validateControlData(base, registry);
    if (!good.ok) throw new Error('fixture');
    const set = compileControls(
      [
        { control_id: 1, name: 'good', data: good.data },
        { control_id: 2, name: 'gone', data: { ...good.data, evaluator: { name: 'vanished', config: {} } } },
        { control_id: 3, name: 'broken', data: { ...good.data, evaluator: { name: 'regex', config: { pattern: 'a(' } } } },
      ],
      registry,
    );
    expect(set.controls.map((c) => c.name)).toEqual(['good']);
    expect(set.skipped.map((s) => [s.control_id, s.issues[0]!.field])).toEqual([
      [2, 'evaluator.name'],
      [3, 'evaluator.config.pattern'],
    ]);
  });

  it('returns a frozen set', () => {
    const good = validateControlData(base, registry);
    if (!good.ok) throw new Error('fixture');
    const set = compileControls([{ control_id: 1, name: 'good', data: good.data }], registry);
    expect(Object.isFrozen(set)).toBe(true);
    expect(Object.isFrozen(set.controls)).toBe(true);
    expect(Object.isFrozen(set.index.pre.tool)).toBe(true);
    expect(Object.isFrozen(set.controls[0])).toBe(true);
  });
});
