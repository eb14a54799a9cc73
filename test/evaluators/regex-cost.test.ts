/**
 * What a control's regular expression may cost (docs/security.md): the limits are checked
 * when a control is validated, with the field path, and they bound the work per byte of
 * text. These tests assert the structure of the bound; bench/regex-cost.ts measures it.
 */
import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, validateControlData } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/index.js';
import { mayMatch, prefilterOf, PREFILTER_MAX_TEXT } from '../../src/evaluators/regex/literals.js';
import { programSizeOf } from '../../src/evaluators/regex/program-size.js';
import { compilePattern, MAX_PROGRAM_SIZE } from '../../src/evaluators/regex/re2.js';
import { compileScope } from '../../src/sdk/scope.js';
import { MAX_PATTERN_LENGTH } from '../../src/model/index.js';
import { regexControl, toolStep } from '../engine/helpers.js';

const registry = createDefaultRegistry();

/** The review's pattern: 2,000 x characters (4 s on 400 KB of x…xy before the limits). */
const LONG_LITERAL = 'x'.repeat(2000);
/** 12 characters, but a program of about 1,000 instructions (x then 1,000 copies of [xy]). */
const WIDE_REPEAT = 'x[xy]{1000}z';

function issuesOf(data: Record<string, unknown>) {
  const outcome = validateControlData({ action: { decision: 'deny' }, ...data }, registry);
  return outcome.ok ? [] : outcome.issues;
}

const regexLeaf = (pattern: string) => ({ selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern } } });

describe('regex cost limits at validation', () => {
  it('refuses a pattern longer than the limit, naming the field', () => {
    const issues = issuesOf(regexLeaf(LONG_LITERAL));
    expect(issues).toEqual([
      expect.objectContaining({ field: 'evaluator.config.pattern', message: expect.stringMatching(/^pattern too long: 2000 characters; the limit is 1000/) }),
    ]);
  });

  it('refuses a short pattern whose program is too large, naming the field', () => {
    const issues = issuesOf(regexLeaf(WIDE_REPEAT));
    expect(issues).toEqual([
      expect.objectContaining({ field: 'evaluator.config.pattern', message: expect.stringMatching(/^pattern too large: its program has about 1002 instructions; the limit is 200/) }),
    ]);
  });

  it('checks step_name_regex and condition leaves the same way', () => {
    expect(issuesOf({ ...regexLeaf('a'), scope: { step_name_regex: LONG_LITERAL } })).toEqual([
      expect.objectContaining({ field: 'scope.step_name_regex', message: expect.stringMatching(/^pattern too long/) }),
    ]);
    expect(issuesOf({ ...regexLeaf('a'), scope: { step_name_regex: WIDE_REPEAT } })).toEqual([
      expect.objectContaining({ field: 'scope.step_name_regex', message: expect.stringMatching(/^pattern too large/) }),
    ]);
    expect(issuesOf({ condition: { and: [regexLeaf('a'), regexLeaf(WIDE_REPEAT)] } })).toEqual([
      expect.objectContaining({ field: 'condition.and[1].evaluator.config.pattern', message: expect.stringMatching(/^pattern too large/) }),
    ]);
  });

  it('accepts the largest patterns allowed, which bench/regex-cost.ts measures', () => {
    expect(issuesOf(regexLeaf('x'.repeat(MAX_PROGRAM_SIZE)))).toEqual([]);
    expect(issuesOf(regexLeaf(`x[xy]{${MAX_PROGRAM_SIZE - 2}}z`))).toEqual([]);
    expect(issuesOf(regexLeaf(`x[xy]{${MAX_PROGRAM_SIZE - 1}}z`))).not.toEqual([]);
    expect(issuesOf(regexLeaf(`(?i)${'[a-z]'.repeat(MAX_PATTERN_LENGTH / 5 - 1)}`))).toEqual([]);
  });

  it('keeps the patterns real controls use', () => {
    for (const pattern of [
      '\\b(?:\\d[ -]?){13,16}\\b',
      '(AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----|(?i)bearer\\s+[a-z0-9._~+/-]{20,}|ghp_[A-Za-z0-9]{36})',
      'xox[baprs]-([0-9a-zA-Z]{10,48})',
      '(?i)\\b(drop|truncate|alter)\\s+(table|database|schema)\\b',
      '\\p{L}+\\s\\p{L}+',
    ]) {
      expect(compilePattern(pattern), pattern).not.toBeTypeOf('string');
    }
  });

  it('leaves the SDK asking the server for a step whose scope regex is over the limit', () => {
    // The SDK compiles step_name_regex with the same helper: an over-limit regex does not
    // compile there, so the scope matches every name rather than skipping the check.
    expect(compileScope({ step_name_regex: WIDE_REPEAT })('tool', 'anything', 'pre')).toBe(true);
  });
});

describe('program size', () => {
  it.each([
    ['abc', 3],
    ['(?i)abc', 4],
    ['a|b', 3],
    ['(a)', 3],
    ['(?:a)', 1],
    ['a*', 3],
    ['a{1000}', 1000],
    ['a{2,5}', 2 + 3 * 2],
    ['a{3,}', 3 + 2],
    ['(?:ab){3}', 6],
    ['[a-z\\p{Greek}]{10}', 10],
    ['\\pL\\p{Han}.\\C', 4],
    ['\\b^$', 6],
    ['\\Qa.b*\\E+', 4 + 2],
    ['a{,3}', 5], // not a repetition: a and four literal characters
    ['x[xy]{1000}z', 1002],
  ])('%s has about %i instructions', (source, size) => {
    expect(programSizeOf(source)).toBe(size);
  });
});

describe('literal prefilter bound', () => {
  it('keeps at most 16 literals of at most 64 characters, however long the pattern', () => {
    const prefilter = prefilterOf('x'.repeat(MAX_PATTERN_LENGTH))!;
    expect(prefilter.literals.length).toBeLessThanOrEqual(16);
    for (const literal of prefilter.literals) expect(literal.length).toBeLessThanOrEqual(64);
  });

  it('is not consulted on texts longer than PREFILTER_MAX_TEXT, which go to RE2 in one linear pass', () => {
    const prefilter = prefilterOf('(?i)needle')!;
    expect(mayMatch(prefilter, 'x'.repeat(PREFILTER_MAX_TEXT))).toBe(false);
    // Without the literal, a longer text is still handed to RE2 rather than searched per literal.
    expect(mayMatch(prefilter, 'x'.repeat(PREFILTER_MAX_TEXT + 1))).toBe(true);
  });

  it('still finds a match in a long text', async () => {
    const set = compileControls([regexControl('needle', '(?i)needle')], registry);
    const { result } = await evaluateStep(set, toolStep('t', `${'x'.repeat(PREFILTER_MAX_TEXT * 4)}NEEDLE`), 'pre');
    expect(result.decision).toBe('deny');
  });
});
