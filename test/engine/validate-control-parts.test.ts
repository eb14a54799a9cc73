// A schema error elsewhere does not hide what the evaluators and the regex engine find.
import { describe, expect, it } from 'vitest';
import { validateControlData, validateControlDocument } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';

const registry = createDefaultRegistry();

const base = {
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '(?i)drop' } },
  action: { decision: 'deny' },
};

const fieldsOf = (outcome: ReturnType<typeof validateControlData>) => (outcome.ok ? [] : outcome.issues.map((i) => `${i.field} ${i.code}`));

type Case = [label: string, data: Record<string, unknown>, fields: string[]];

const cases: Case[] = [
  [
    'a bad pattern next to an unknown scope key',
    { ...base, scope: { stagez: ['pre'] }, evaluator: { name: 'regex', config: { pattern: 'a(' } } },
    ['scope.stagez unknown_field', 'evaluator.config.pattern invalid_config'],
  ],
  [
    'a bad step_name_regex next to a bad selector path',
    { ...base, selector: { path: 'inputs' }, scope: { step_name_regex: '[' } },
    ['selector.path invalid_format', 'scope.step_name_regex invalid_regex'],
  ],
  [
    'an unknown evaluator next to an unknown top-level key',
    { ...base, extra: 1, evaluator: { name: 'regx', config: {} } },
    ['extra unknown_field', 'evaluator.name unknown_evaluator'],
  ],
  [
    'condition leaves, each checked on its own, next to a missing action',
    {
      condition: {
        and: [
          { selector: { path: 'input' }, evaluator: { name: 'list', config: { values: [] } } },
          { not: { selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern: '(?=x)' } } } },
          { selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern: 'ok' } } },
        ],
      },
    },
    ['action invalid_type', 'condition.and[0].evaluator.config.values too_small', 'condition.and[1].not.evaluator.config.pattern invalid_config'],
  ],
  [
    'nothing extra for an evaluator that is itself malformed',
    { ...base, scope: { stagez: ['pre'] }, evaluator: { name: 'regex', config: { pattern: 'a(' }, extra: true } },
    ['scope.stagez unknown_field', 'evaluator.extra unknown_field'],
  ],
  [
    'nothing extra for a step_name_regex of the wrong type',
    { ...base, scope: { stagez: ['pre'], step_name_regex: 7 } },
    ['scope.step_name_regex invalid_type', 'scope.stagez unknown_field'],
  ],
];

describe('validateControlData with a schema error', () => {
  it.each(cases)('reports %s', (_label, data, fields) => {
    expect(fieldsOf(validateControlData(data, registry))).toEqual(fields);
  });

  it('reports each problem once', () => {
    const outcome = validateControlData({ ...base, scope: { stagez: ['pre'], step_name_regex: '(' } }, registry);
    const fields = fieldsOf(outcome);
    expect(new Set(fields).size).toBe(fields.length);
  });
});

describe('validateControlDocument with a schema error', () => {
  it('checks the evaluator and the step_name_regex of a document with an unknown key', () => {
    const outcome = validateControlDocument(
      { kind: 'Control', name: 'x', ...base, scope: { colour: 'blue', step_name_regex: '(' }, evaluator: { name: 'regex', config: { pattern: '\\1' } } },
      registry,
    );
    expect(fieldsOf(outcome)).toEqual(['scope.colour unknown_field', 'scope.step_name_regex invalid_regex', 'evaluator.config.pattern invalid_config']);
  });
});
