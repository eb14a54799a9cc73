/**
 * Session scope in the engine (src/engine/session-scope.ts): which candidates a session's
 * labels let apply (memoised per combination of labels, so later stages that memoise on a
 * list's identity keep working), and what a step's matches add.
 */
import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, inSessionScope, sessionOutcome, type EvaluationOutcome } from '../../src/engine/index.js';
import { HOT_AFTER, scanGroupsOf } from '../../src/engine/scan-groups.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { control, regexControl, toolStep } from './helpers.js';

const registry = createDefaultRegistry();
const sync = (o: EvaluationOutcome | Promise<EvaluationOutcome>) => o as EvaluationOutcome;
const onQuery = { selector: { path: 'input.query' } };

const set = compileControls(
  [
    regexControl('drop', '(?i)\\bdrop\\s+table\\b', onQuery),
    regexControl('truncate', '(?i)\\btruncate\\b', onQuery),
    regexControl('needs-a', '(?i)\\bexport\\b', { ...onQuery, scope: { session_labels: ['a'] } }),
    regexControl('needs-a-b', '(?i)\\bcopy\\b', { ...onQuery, scope: { session_labels: ['a', 'b'] } }),
    regexControl('without-b', '(?i)\\bgrant\\b', { ...onQuery, scope: { session_labels_absent: ['b'] } }),
    control('mark-b', { ...onQuery, evaluator: { name: 'regex', config: { pattern: 'mark' } }, action: { decision: 'log', session_labels: ['b'] } }),
  ],
  registry,
);
const step = toolStep('run_sql', { query: 'SELECT 1' });
const candidates = () => set.index.pre.tool;
const names = (list: readonly { name: string }[]) => list.map((c) => c.name);

describe('inSessionScope', () => {
  it('lets a control apply when the session carries all its required labels and none of its absent ones', () => {
    const cases: Array<[string[], string[]]> = [
      [[], ['drop', 'truncate', 'without-b', 'mark-b']],
      [['a'], ['drop', 'truncate', 'needs-a', 'without-b', 'mark-b']],
      [['b'], ['drop', 'truncate', 'mark-b']],
      [['a', 'b'], ['drop', 'truncate', 'needs-a', 'needs-a-b', 'mark-b']],
      // A label no scope names changes nothing.
      [['a', 'zzz'], ['drop', 'truncate', 'needs-a', 'without-b', 'mark-b']],
    ];
    for (const [labels, expected] of cases) expect(names(inSessionScope(candidates(), new Set(labels)))).toEqual(expected);
    expect(names(inSessionScope(candidates()))).toEqual(['drop', 'truncate', 'without-b', 'mark-b']);
  });

  it('answers the same array for the same labels, whatever set object carries them', () => {
    const first = inSessionScope(candidates(), new Set(['a']));
    expect(inSessionScope(candidates(), new Set(['a']))).toBe(first);
    expect(inSessionScope(candidates(), new Set(['zzz', 'a']))).toBe(first);
    expect(inSessionScope(candidates(), new Set(['a', 'b']))).not.toBe(first);
  });

  it('answers the list itself when no candidate has a session scope', () => {
    const plain = compileControls([regexControl('x', 'x', onQuery), regexControl('y', 'y', onQuery)], registry).index.pre.tool;
    expect(inSessionScope(plain, new Set(['a']))).toBe(plain);
  });

  it('filters exactly when the scopes name more labels than are memoised', () => {
    const labels = Array.from({ length: 40 }, (_, i) => `l${i}`);
    const many = compileControls(
      labels.map((label) => regexControl(`needs-${label}`, 'x', { scope: { session_labels: [label] } })),
      registry,
    ).index.pre.tool;
    expect(names(inSessionScope(many, new Set(['l3', 'l39'])))).toEqual(['needs-l3', 'needs-l39']);
    expect(names(inSessionScope(many, new Set()))).toEqual([]);
  });

  it('lets the scan groups of a session step be built once its list is hot', () => {
    // Each step of a session reads a fresh label set, as replicas on PostgreSQL make them.
    for (let i = 0; i <= HOT_AFTER; i++) sync(evaluateStep(set, step, 'pre', { session: { id: 's', labels: new Set(['zzz']) } }));
    const list = inSessionScope(set.byName.pre.tool.get('run_sql')!, new Set());
    expect(scanGroupsOf(list)).not.toBeNull();
    // And the answers stay exact: a label-gated control applies once its label is there.
    const hit = toolStep('run_sql', { query: 'export everything' });
    expect(sync(evaluateStep(set, hit, 'pre', { session: { id: 's', labels: new Set() } })).result.decision).toBe('allow');
    expect(sync(evaluateStep(set, hit, 'pre', { session: { id: 's', labels: new Set(['a']) } })).result.decision).toBe('deny');
  });
});

describe('sessionOutcome', () => {
  it('adds nothing and copies no list when no match adds labels', () => {
    const session = { id: 's', labels: new Set(['b', 'a']) };
    const outcome = sync(evaluateStep(set, toolStep('run_sql', { query: 'drop table t' }), 'pre', { session }));
    const { result, added } = sessionOutcome(outcome.result, set, session);
    expect(added).toEqual([]);
    expect(result.matches).toBe(outcome.result.matches);
    expect(result.session).toEqual({ id: 's', labels: ['a', 'b'] });
    expect(Object.keys(result)).toEqual(['is_safe', 'decision', 'confidence', 'steering_context', 'matches', 'errors', 'non_matches', 'shadow_matches', 'session']);
  });

  it('names the labels a match adds, new ones once, and leaves the session it was given unchanged', () => {
    const session = { id: 's', labels: new Set<string>() };
    const outcome = sync(evaluateStep(set, toolStep('run_sql', { query: 'mark this' }), 'pre', { session }));
    const { result, added } = sessionOutcome(outcome.result, set, session);
    expect(added.map((l) => l.label)).toEqual(['b']);
    expect(result.matches.map((m) => m.session_labels_added)).toEqual([['b']]);
    expect(result.session!.labels).toEqual(['b']);
    expect([...session.labels]).toEqual([]);
    const again = sessionOutcome(outcome.result, set, { id: 's', labels: new Set(['b']) });
    expect(again.added).toEqual([]);
  });
});
