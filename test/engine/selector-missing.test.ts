import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, type EvaluationOutcome } from '../../src/engine/index.js';
import { HOT_AFTER } from '../../src/engine/scan-groups.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import type { Stage, Step } from '../../src/model/index.js';
import { control, regexControl, toolStep } from './helpers.js';

const registry = createDefaultRegistry();
const sync = (o: EvaluationOutcome | Promise<EvaluationOutcome>) => o as EvaluationOutcome;

const controls = [
  regexControl('drop', '(?i)\\bdrop\\s+table\\b', { selector: { path: 'input.query' } }),
  regexControl('truncate', '(?i)\\btruncate\\b', { selector: { path: 'input.query' } }),
  regexControl('user', '^bad', { selector: { path: 'context.user_id' } }),
  regexControl('secret-out', 'sk_live_', { selector: { path: 'output' } }),
  control('either-field', {
    condition: {
      or: [
        { selector: { path: 'input.query' }, evaluator: { name: 'regex', config: { pattern: 'delete' } } },
        { selector: { path: 'input.sql' }, evaluator: { name: 'regex', config: { pattern: 'delete' } } },
      ],
    },
    action: { decision: 'deny' },
  }),
];

/** The names of the controls marked selector_missing, hot (scanned in groups) and cold alike. */
function missing(step: Step, stage: Stage = 'pre'): string[] {
  const answers: string[][] = [];
  for (const hot of [false, true]) {
    const set = compileControls(controls, registry);
    if (hot) for (let i = 0; i < HOT_AFTER; i++) sync(evaluateStep(set, step, stage));
    for (const collectExecutions of [false, true]) {
      const outcome = sync(evaluateStep(set, step, stage, { collectExecutions }));
      const names = outcome.result.non_matches.filter((m) => m.selector_missing === true).map((m) => m.control_name);
      answers.push(names);
      if (collectExecutions) {
        expect(outcome.executions!.filter((x) => x.selector_missing).map((x) => x.control_name)).toEqual(names);
      }
    }
  }
  expect(new Set(answers.map((a) => a.join()))).toHaveProperty('size', 1);
  return answers[0]!;
}

describe('selector_missing', () => {
  it('marks the controls whose field is not in the step', () => {
    expect(missing(toolStep('run_sql', { sql: 'select 1' }))).toEqual(['drop', 'truncate', 'user']);
  });

  it('marks nothing when every field is there', () => {
    expect(missing(toolStep('run_sql', { query: 'select 1' }, { context: { user_id: 'u1' } }))).toEqual([]);
  });

  it('does not mark an output selector before the step has run, but does after', () => {
    const step = toolStep('run_sql', { query: 'select 1' }, { context: { user_id: 'u1' } });
    expect(missing(step, 'pre')).toEqual([]);
    expect(missing(step, 'post')).toEqual(['secret-out']);
  });

  it('marks a condition tree only when none of its leaves found anything', () => {
    expect(missing(toolStep('run_sql', { sql: 'select 1' }, { context: { user_id: 'u1' } }))).toEqual(['drop', 'truncate']);
    expect(missing(toolStep('run_sql', { other: 1 }, { context: { user_id: 'u1' } }))).toEqual(['drop', 'truncate', 'either-field']);
  });

  it('never marks a match: a missing field under `not` matches as before', () => {
    const set = compileControls([control('needs-ticket', {
      condition: { not: { selector: { path: 'input.ticket' }, evaluator: { name: 'regex', config: { pattern: '.' } } } },
      action: { decision: 'deny' },
    })], registry);
    const result = sync(evaluateStep(set, toolStep('deploy', {}), 'pre')).result;
    expect(result.decision).toBe('deny');
    expect(result.matches[0]).not.toHaveProperty('selector_missing');
  });
});

describe('selector.optional', () => {
  it('a control that declares its path optional is never reported as missing it; others still are', () => {
    const set = compileControls([
      regexControl('optional-note', 'x', { selector: { path: 'input.note', optional: true } }),
      regexControl('required-query', 'x', { selector: { path: 'input.query' } }),
      control('tree-optional', {
        condition: { or: [{ selector: { path: 'input.a', optional: true }, evaluator: { name: 'regex', config: { pattern: 'x' } } }, { selector: { path: 'input.b', optional: true }, evaluator: { name: 'regex', config: { pattern: 'x' } } }] },
        action: { decision: 'deny' },
      }),
    ], registry);
    for (const collectExecutions of [false, true]) {
      const outcome = sync(evaluateStep(set, toolStep('t', { other: 1 }), 'pre', { collectExecutions }));
      expect(outcome.result.non_matches.filter((m) => m.selector_missing === true).map((m) => m.control_name)).toEqual(['required-query']);
    }
  });
});
