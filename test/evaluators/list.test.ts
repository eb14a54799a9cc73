import { describe, expect, it } from 'vitest';
import { listEvaluator, type EvaluatorOutcome, type ListConfig } from '../../src/evaluators/index.js';

function run(config: Partial<ListConfig> & { values: string[] }, value: unknown): boolean {
  return (listEvaluator.compile(config)(value) as EvaluatorOutcome).matched;
}

const values = ['Admin', 'root'];
type Mode = ListConfig['match_mode'];
type Logic = ListConfig['logic'];
type Case = [mode: Mode, caseSensitive: boolean, logic: Logic, value: unknown, matched: boolean];

const cases: Case[] = [
  // exact
  ['exact', false, 'any', 'admin', true],
  ['exact', false, 'any', 'ADMIN', true],
  ['exact', true, 'any', 'admin', false],
  ['exact', true, 'any', 'Admin', true],
  ['exact', false, 'any', 'administrator', false],
  ['exact', false, 'any', ['guest', 'ROOT'], true],
  ['exact', false, 'any', ['guest'], false],
  ['exact', false, 'all', ['admin', 'root'], true],
  ['exact', false, 'all', ['admin'], false],
  ['exact', true, 'all', ['Admin', 'Root'], false],
  ['exact', false, 'all', 'admin', false],
  // contains
  ['contains', false, 'any', 'I am the ADMINISTRATOR', true],
  ['contains', true, 'any', 'I am the ADMINISTRATOR', false],
  ['contains', true, 'any', 'I am the Administrator', true],
  ['contains', false, 'any', ['x', 'chroot'], true],
  ['contains', false, 'all', 'admin and root', true],
  ['contains', false, 'all', 'admin only', false],
  ['contains', false, 'all', ['admin here', 'root there'], true],
  ['contains', true, 'all', 'admin and root', false],
  // starts_with
  ['starts_with', false, 'any', 'rooted tree', true],
  ['starts_with', false, 'any', 'uproot', false],
  ['starts_with', true, 'any', 'Rooted', false],
  ['starts_with', false, 'any', ['x', 'ADMINS'], true],
  ['starts_with', false, 'all', ['admin1', 'root1'], true],
  ['starts_with', false, 'all', 'admin root', false],
  // values that are not strings
  ['exact', false, 'any', null, false],
  ['exact', false, 'any', undefined, false],
  ['exact', false, 'any', [], false],
  ['exact', false, 'all', [], false],
  ['contains', false, 'any', { role: 'admin' }, true], // objects as JSON
];

describe('list evaluator', () => {
  it.each(cases)('%s case_sensitive=%s logic=%s on %j -> %s', (match_mode, case_sensitive, logic, value, matched) => {
    expect(run({ values, match_mode, case_sensitive, logic }, value)).toBe(matched);
  });

  it('defaults: exact, case-insensitive, any', () => {
    expect(run({ values: ['Delete'] }, 'DELETE')).toBe(true);
    expect(run({ values: ['Delete'] }, 'DELETE it')).toBe(false);
    expect(run({ values: ['a', 'b'] }, 'b')).toBe(true);
  });

  it('names what matched', () => {
    const out = listEvaluator.compile({ values: ['rm -rf'], match_mode: 'contains' })('sudo rm -rf /') as EvaluatorOutcome;
    expect(out.message).toBe('list matched "rm -rf"');
  });

  it('serves a JSON Schema where only values is required', () => {
    expect(listEvaluator.configSchema).toMatchObject({
      type: 'object',
      required: ['values'],
      properties: { values: { type: 'array', minItems: 1 }, match_mode: { enum: ['exact', 'contains', 'starts_with'] } },
    });
  });
});
