import RE2 from 're2';
import { describe, expect, it } from 'vitest';
import { mayMatch, mayMatchAny, mergePrefilters, prefilterOf, type Prefilter } from '../../src/evaluators/regex/literals.js';
import { regexEvaluator } from '../../src/evaluators/regex/index.js';
import { TextMemo } from '../../src/evaluators/text.js';

describe('required literals of a pattern', () => {
  it.each([
    ['(?i)\\b(drop|truncate|alter)\\s+table\\s+t4\\b', ['table'], true],
    ['(?i)\\b(drop|truncate)\\b', ['drop', 'truncate'], true],
    ['colou?r', ['colour', 'color'], false],
    ['(?P<x>foo|bar)baz', ['foobaz', 'barbaz'], false],
    ['(?<x>foo|bar)baz', ['foobaz', 'barbaz'], false],
    ['[a-z]+@example\\.com', ['@example.com'], false],
    ['sk_live_[a-z0-9]{24}', ['sk_live_'], false],
    ['(?:SELECT|select) \\* FROM', ['SELECT * FROM', 'select * FROM'], false],
    ['a(?i:BC)DEF', ['abcdef'], true],
    ['^password=\\S+$', ['password='], false],
    ['[[:alpha:]]+ table', [' table'], false],
    ['[]x] table', [' table'], false],
    ['\\p{Greek}+ omega', [' omega'], false],
  ])('%s requires one of %j', (pattern, literals, folded) => {
    expect(prefilterOf(pattern)).toEqual({ literals, folded });
  });

  it.each([
    ['\\b\\d{4}-\\d{4}\\b', 'no literal of 3 characters'],
    ['foo|\\d+', 'one alternative requires nothing'],
    ['(foo)*bar?', 'optional parts'],
    ['\\x41BCD', 'escapes with rules of their own'],
    ['\\QABC\\E', 'quoted text'],
    ['\\101BC', 'octal'],
    ['\\u0041BCD', 'JavaScript escapes translated by node-re2'],
    ['a{,2}bcd', 'a brace RE2 reads as a literal'],
    ['(?<=x)abc', 'look-behind (rejected by RE2 anyway)'],
    ['[abc', 'an unclosed class'],
    ['(abc', 'an unclosed group'],
    ['abc)', 'an unopened group'],
  ])('gives up on %s (%s)', (pattern) => {
    expect(prefilterOf(pattern)).toBeNull();
  });

  it('compares a case-insensitive pattern on lowercased text, the long s included', () => {
    const pre = prefilterOf('(?i)password')!;
    for (const text of ['PASSWORD', 'PaSsWoRd', 'paſſword', 'PAſſWORD']) {
      expect(new RE2('(?i)password', 'u').test(text)).toBe(true);
      expect(mayMatch(pre, text)).toBe(true);
      expect(mayMatch(pre, text, new TextMemo())).toBe(true);
    }
    expect(mayMatch(pre, 'passw0rd')).toBe(false);
    // The Kelvin sign folds to k in RE2 and lowercases to k in JavaScript.
    expect(mayMatch(prefilterOf('(?i)token')!, 'TO\u212aEN')).toBe(true);
  });

  it('knows every non-ASCII character RE2 folds to an ASCII letter', () => {
    // The prefilter relies on toLowerCase plus "ſ" -> "s" covering RE2's case folding.
    const all: string[] = [];
    for (let cp = 0x80; cp <= 0x10ffff; cp++) if (cp < 0xd800 || cp > 0xdfff) all.push(String.fromCodePoint(cp));
    const found = new RE2('(?i)[a-z]', 'gu');
    const folding = [...all.join('').matchAll(found as unknown as RegExp)].map((m) => m[0]);
    expect(folding.sort()).toEqual(['ſ', '\u212a']);
    for (const c of folding) {
      const letter = [...'abcdefghijklmnopqrstuvwxyz'].find((x) => new RE2(`(?i)${x}`, 'u').test(c))!;
      expect(mayMatch({ literals: [letter], folded: true }, c)).toBe(true);
    }
  });

  it('never rules out a text RE2 matches (random patterns and texts)', () => {
    // mulberry32: a seeded generator, so a failure reproduces.
    let seed = 7;
    const rand = (n: number) => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return (((t ^ (t >>> 14)) >>> 0) % n);
    };
    const pick = <T>(xs: readonly T[]) => xs[rand(xs.length)]!;
    const atoms = ['a', 'b', 's', 'k', 'A', 'S', 'K', '.', '[ab]', '\\d', '\\b', '\\.', '-', 'ſ', '\\pL', '^', '$'];
    const quants = ['', '', '', '*', '+', '?', '{2}', '{1,3}', '{0,2}', '+?'];
    const alt = (depth: number): string => {
      const branches: string[] = [];
      for (let b = 0; b <= rand(3) && b < 3; b++) {
        let branch = '';
        for (let i = 0; i <= rand(5); i++) {
          const r = rand(12);
          const atom = depth < 2 && r === 0 ? `(${alt(depth + 1)})` : depth < 2 && r === 1 ? `(?:${alt(depth + 1)})` : r === 2 ? '(?i)' : pick(atoms);
          branch += atom + (atom === '(?i)' || atom === '\\b' || atom === '^' || atom === '$' ? '' : pick(quants));
        }
        branches.push(branch);
      }
      return branches.join('|');
    };
    const alphabet = ['a', 'b', 's', 'k', 'A', 'B', 'S', 'K', 'ſ', '\u212a', 'İ', '.', '-', '1', ' ', 'x'];
    let filtered = 0;
    let checked = 0;
    for (let p = 0; p < 3000; p++) {
      const pattern = alt(0);
      let re: RE2;
      try {
        re = new RE2(pattern, 'u');
      } catch {
        continue;
      }
      const pre = prefilterOf(pattern, 1);
      if (pre === null) continue;
      filtered++;
      for (let t = 0; t < 80; t++) {
        let text = '';
        for (let i = 0; i < rand(10); i++) text += pick(alphabet);
        if (re.test(text)) {
          checked++;
          if (!mayMatch(pre, text)) throw new Error(`prefilter of /${pattern}/ ${JSON.stringify(pre)} rules out ${JSON.stringify(text)}`);
        }
      }
    }
    // The generator must exercise the prefilter, or this test proves nothing.
    expect(filtered).toBeGreaterThan(500);
    expect(checked).toBeGreaterThan(2000);
    expect(checked).toBeLessThan(filtered * 80); // and texts it rules out
  });
});

describe('merged prefilters of a scan group', () => {
  const members: Prefilter[] = [
    prefilterOf('(?i)\\b(drop|truncate|alter)\\s+table\\s+t1\\b')!,
    prefilterOf('(?i)\\btruncate\\s+table\\b')!,
    prefilterOf('(?i)\\b(drop|truncate)\\b')!,
    prefilterOf('colou?r')!,
    prefilterOf('Password=')!,
  ];

  it('keeps one folded and one exact prefilter, each literal once', () => {
    expect(members.every((p) => p !== null)).toBe(true);
    const merged = mergePrefilters(members);
    expect(merged.map((p) => [p.folded, [...p.literals].sort()])).toEqual([
      [true, ['drop', 'table', 'truncate']],
      [false, ['Password=', 'color', 'colour']],
    ]);
  });

  it('lets a text through exactly when one member would', () => {
    const merged = mergePrefilters(members);
    const texts = ['SELECT 1', 'DROP it', 'a TABLE', 'TRUNCATE', 'ſ TABLE'.replace('T', 't'), 'colour', 'COLOUR', 'password=', 'Password=', 'dRoP', 'tabl', ''];
    for (const text of texts) expect(mayMatchAny(merged, text), text).toBe(mayMatchAny(members, text));
    expect(mergePrefilters([])).toEqual([]);
  });
});

describe('regex check with a prefilter', () => {
  const check = (pattern: string) => regexEvaluator.compile({ pattern }) as (v: unknown, m?: TextMemo) => { matched: boolean };

  it('matches what RE2 matches, with and without the step memo', () => {
    const c = check('(?i)\\bpassword\\s*=');
    for (const text of ['PASSWORD = x', 'paſſword=1', 'my password=']) {
      expect(c(text).matched).toBe(true);
      expect(c(text, new TextMemo()).matched).toBe(true);
    }
    expect(c('pass word=').matched).toBe(false);
    expect(c({ nested: { value: 'Password=hunter2' } }, new TextMemo()).matched).toBe(true);
  });
});
