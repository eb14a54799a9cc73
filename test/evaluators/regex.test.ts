import { describe, expect, it } from 'vitest';
import { regexEvaluator, type EvaluatorOutcome, type PartCache } from '../../src/evaluators/index.js';

function run(pattern: string, value: unknown): EvaluatorOutcome {
  return regexEvaluator.compile({ pattern })(value) as EvaluatorOutcome;
}

type Case = [pattern: string, value: unknown, matched: boolean];

const cases: Case[] = [
  ['drop', 'DROP TABLE users', false],
  ['(?i)drop', 'DROP TABLE users', true],
  ['(?i)\\b(drop|truncate)\\s+table\\b', 'please truncate   Table x', true],
  ['(?i)\\bdrop\\b', 'dropping', false],
  ['^a.b$', 'a\nb', false],
  ['(?s)^a.b$', 'a\nb', true],
  ['^b', 'a\nb', false],
  ['(?m)^b', 'a\nb', true],
  ['\\d{3}-\\d{4}', 'call 555-1234', true],
  ['é', 'café', true],
  ['42', 42, true], // numbers are searched as JSON text
  ['^true$', true, true],
  ['"k":"v"', { k: 'v' }, true], // objects as JSON
  ['secret', ['a', 'my secret'], true],
  ['.*', null, false], // nothing selected never matches
  ['.*', undefined, false],
];

describe('regex evaluator', () => {
  it.each(cases)('/%s/ on %j -> %s', (pattern, value, matched) => {
    expect(run(pattern, value).matched).toBe(matched);
  });

  it('reports the match in `found`, apart from the message (the engine masks it)', () => {
    expect(run('(?i)drop table', 'x; DROP TABLE users')).toMatchObject({ message: 'pattern matched', found: ['DROP TABLE'] });
    expect(run('a+', 'a'.repeat(500)).found).toEqual(['a'.repeat(500)]);
  });

  it.each([
    ['(?i)limit\\s+\\d+', 'héllo wörld LIMIT 5 ünd', 'LIMIT 5'], // offsets after non-ASCII text
    ['\\bcat\\b', 'concat cat', 'cat'],
    ['(?i)\\bcat\\w*', 'concat Cats', 'Cats'], // \b sees the text before the match
    ['a|ab', 'xab', 'a'], // leftmost-first, like JavaScript
  ])('reports the match of /%s/ in %j: %j', (pattern, value, text) => {
    expect(run(pattern, value).found).toEqual([text]);
  });

  it('says so when the match is empty, with nothing found', () => {
    expect(run('x*', 'abc')).toMatchObject({ matched: true, message: 'pattern matched an empty string' });
    expect(run('x*', 'abc').found ?? null).toBeNull();
  });

  it('rejects patterns RE2 cannot run, naming the field', () => {
    for (const bad of ['a(', '(?<=a)b', '(a)\\1', '[z-a]']) {
      expect(() => regexEvaluator.compile({ pattern: bad }), bad).toThrow(expect.objectContaining({ field: 'pattern', name: 'ConfigError' }));
    }
  });

  it('shares one check between controls with the same pattern when given a PartCache', () => {
    const kept = new Map<string, object>();
    const parts: PartCache = {
      share: <T extends object>(key: string, make: () => T) => {
        if (!kept.has(key)) kept.set(key, make());
        return kept.get(key) as T;
      },
    };
    const a = regexEvaluator.compile({ pattern: '(?i)drop\\s+table' }, parts);
    const b = regexEvaluator.compile({ pattern: '(?i)drop\\s+table' }, parts);
    const other = regexEvaluator.compile({ pattern: 'truncate' }, parts);
    expect(b).toBe(a);
    expect(other).not.toBe(a);
    // Used in turn on different values (its sticky twin included), it quotes each one's match.
    expect((a('x; DROP TABLE users') as EvaluatorOutcome).found).toEqual(['DROP TABLE']);
    expect((b('drop   table t') as EvaluatorOutcome).found).toEqual(['drop   table']);
    expect((a('select 1') as EvaluatorOutcome).matched).toBe(false);
    // A pattern that does not compile is reported and not kept.
    expect(() => regexEvaluator.compile({ pattern: 'a(' }, parts)).toThrow(expect.objectContaining({ field: 'pattern' }));
    expect([...kept.keys()]).toEqual(['(?i)drop\\s+table', 'truncate']);
  });

  it('serves a JSON Schema for its config', () => {
    expect(regexEvaluator.configSchema).toMatchObject({
      type: 'object',
      properties: { pattern: { type: 'string' } },
      required: ['pattern'],
      additionalProperties: false,
    });
  });
});
