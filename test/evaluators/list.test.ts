import { describe, expect, it } from 'vitest';
import { listEvaluator, type EvaluatorOutcome, type ListConfig } from '../../src/evaluators/index.js';
import type { ScanHint } from '../../src/evaluators/types.js';

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
  ['contains', false, 'any', 7, false],
  ['contains', false, 'any', ['rootless', 3], true],
  // Values JSON cannot hold read as JSON's null would: nothing to look at.
  ['contains', false, 'any', Number.NaN, false],
  ['contains', false, 'any', [Number.POSITIVE_INFINITY, () => 'root', Symbol('root')], false],
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
    // What matched is reported apart from the message, as the value has it: the engine masks it.
    expect(out).toMatchObject({ message: 'list matched', found: ['rm -rf'] });
    const cased = listEvaluator.compile({ values: ['rm -rf'], match_mode: 'starts_with' })('RM -RF /tmp') as EvaluatorOutcome;
    expect(cased.found).toEqual(['RM -RF']);
    const exact = listEvaluator.compile({ values: ['prod', 'eu'], logic: 'all', match_mode: 'contains' })(['PROD-1', 'x-EU']) as EvaluatorOutcome;
    expect(exact.found).toEqual(['PROD', 'EU']);
  });

  it('serves a JSON Schema where only values is required', () => {
    expect(listEvaluator.configSchema).toMatchObject({
      type: 'object',
      required: ['values'],
      properties: { values: { type: 'array', minItems: 1 }, match_mode: { enum: ['exact', 'contains', 'starts_with'] } },
    });
  });

  it('declares its entries as scan literals only when the engine may search the JSON text for them', () => {
    const hint = (config: Partial<ListConfig> & { values: string[] }) =>
      (listEvaluator.compile(config) as ScanHint).scanPrefilter ?? null;
    expect(hint({ values: ['DROP', 'drop', 'Truncate'], match_mode: 'contains' })).toEqual({ literals: ['drop', 'truncate'], folded: true });
    expect(hint({ values: ['DROP'], match_mode: 'starts_with', case_sensitive: true, logic: 'all' })).toEqual({ literals: ['DROP'], folded: false });
    // Exact lists answer with a set lookup; entries JSON escapes, or non-ASCII ones, are not
    // found as they are in the JSON text of an array; too many entries cost more than the list.
    expect(hint({ values: ['drop'], match_mode: 'exact' })).toBeNull();
    expect(hint({ values: ['say "drop"'], match_mode: 'contains' })).toBeNull();
    expect(hint({ values: ['C:\\temp'], match_mode: 'contains' })).toBeNull();
    expect(hint({ values: ['tab\there'], match_mode: 'contains' })).toBeNull();
    expect(hint({ values: ['straße'], match_mode: 'contains' })).toBeNull();
    expect(hint({ values: Array.from({ length: 17 }, (_, i) => `word${i}`), match_mode: 'contains' })).toBeNull();
  });
});
