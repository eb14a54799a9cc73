import { describe, expect, it } from 'vitest';
import { constantRecord } from '../../src/engine/index.js';
import type { ControlMatch, EvaluationResult } from '../../src/model/index.js';
import { AnswerWriter } from '../../src/server/result-json.js';

// One app's writer, as routes/evaluation.ts makes it.
const writer = new AnswerWriter();
const evaluationResultJson = (r: EvaluationResult) => writer.json(r);
const evaluationAnswer = (r: EvaluationResult) => writer.answer(r);

// A control's non-match as the engine makes it (build-control.ts).
const plain = (id: number): ControlMatch =>
  constantRecord({ control_id: id, control_name: `c-${id}`, action: 'deny', result: { matched: false, confidence: 1, message: null, metadata: null } });

function result(over: Partial<EvaluationResult>): EvaluationResult {
  return { is_safe: true, decision: 'allow', confidence: 1, steering_context: null, matches: [], errors: [], non_matches: [], shadow_matches: [], ...over };
}

describe('evaluationResultJson', () => {
  const a = plain(1);
  const b = plain(2);
  const c = plain(3);

  it('writes what JSON.stringify writes for results in the model shape', () => {
    const r = result({
      is_safe: false,
      decision: 'steer',
      confidence: 0.8,
      steering_context: { message: 'say "please"\n', required_actions: ['ask'] },
      matches: [
        {
          control_id: 9,
          control_name: 'ünïcode-name',
          action: 'steer',
          result: { matched: true, confidence: 0.8, message: 'hit "x"', metadata: { nested: { list: [1, 'two', null] } } },
          steering_context: { message: 'say "please"\n', required_actions: ['ask'] },
        },
      ],
      errors: [{ control_id: 4, control_name: 'flaky', action: 'log', result: { matched: false, confidence: 0, message: 'evaluator error', metadata: null }, error: 'timeout' }],
      non_matches: [a, b],
    });
    expect(evaluationResultJson(r)).toBe(JSON.stringify(r));
  });

  it('leaves out keys an evaluator added beyond the model', () => {
    const extra = { control_id: 5, control_name: 'x', action: 'warn', result: { matched: true, confidence: 1, message: null, metadata: null, secret: 's' }, debug: 1 };
    const text = evaluationResultJson(result({ matches: [extra as unknown as ControlMatch] }));
    expect(JSON.parse(text).matches[0]).toEqual({ control_id: 5, control_name: 'x', action: 'warn', result: { matched: true, confidence: 1, message: null, metadata: null } });
  });

  it('answers each list of frozen entries with its own text, whatever came before', () => {
    const lists = [[a, b, c], [a, b, c], [a, c], [c, b, a], [a, b, c], [a, plain(1)]];
    for (const list of lists) {
      const r = result({ non_matches: list });
      expect(evaluationResultJson(r)).toBe(JSON.stringify(r));
    }
  });

  it('writes shadow matches in their own list, after the non-matches', () => {
    const shadow: ControlMatch = { control_id: 7, control_name: 'pii-shadow', action: 'deny', result: { matched: true, confidence: 1, message: 'card number', metadata: null } };
    const r = result({ non_matches: [a], shadow_matches: [shadow] });
    expect(evaluationResultJson(r)).toBe(JSON.stringify(r));
    expect(JSON.parse(evaluationResultJson(r)).shadow_matches).toEqual([shadow]);
  });

  it('writes null for a confidence that is not a finite number', () => {
    expect(JSON.parse(evaluationResultJson(result({ confidence: Number.NaN }))).confidence).toBeNull();
  });
});

describe('evaluationAnswer', () => {
  const a = plain(11);
  const b = plain(12);
  const text = (r: EvaluationResult) => evaluationAnswer(r).toString('utf8');

  it('sends the bytes of the same answer again, and a different answer as itself', () => {
    const allow = result({ non_matches: [a, b] });
    const first = evaluationAnswer(allow);
    expect(first.toString('utf8')).toBe(JSON.stringify(allow));
    // A new result object with the same entries: the same bytes, not rebuilt.
    expect(evaluationAnswer(result({ non_matches: [a, b] }))).toBe(first);
    const sequence = [
      result({ non_matches: [b, a] }),
      result({ decision: 'deny', is_safe: false, non_matches: [a, b] }),
      result({ confidence: 0.5, non_matches: [a, b] }),
      result({ non_matches: [a] }),
      result({ non_matches: [] }),
      result({ decision: 'steer', is_safe: false, steering_context: { message: 'slow down' }, non_matches: [a, b] }),
      result({ non_matches: [a, b] }),
    ];
    for (const r of sequence) expect(text(r)).toBe(JSON.stringify(r));
  });

  it('keeps the answer of each step shape an agent sends in turn, and answers each shape as itself', () => {
    const local = new AnswerWriter();
    const [p, q, r2, s] = [plain(21), plain(22), plain(23), plain(24)];
    // Shapes whose non-matches start with the same control, and one without any.
    const shapes = [[p, q], [p, r2], [p], [q, s], []];
    const first = shapes.map((list) => local.answer(result({ non_matches: list })));
    for (let round = 0; round < 3; round++) {
      shapes.forEach((list, i) => {
        const bytes = local.answer(result({ non_matches: list.slice() }));
        expect(bytes).toBe(first[i]);
        expect(bytes.toString('utf8')).toBe(JSON.stringify(result({ non_matches: list })));
      });
    }
    // More shapes than are kept per first entry: each still answers as itself.
    const many = [q, r2, s, plain(25), plain(26), plain(27)].map((m) => [p, m]);
    for (let round = 0; round < 2; round++) {
      for (const list of many) expect(local.answer(result({ non_matches: list })).toString('utf8')).toBe(JSON.stringify(result({ non_matches: list })));
    }
  });

  it('never repeats an answer that holds a match, an error or an entry that may change', () => {
    const hit: ControlMatch = { control_id: 3, control_name: 'c-3', action: 'deny', result: { matched: true, confidence: 1, message: 'first', metadata: null } };
    const r = result({ decision: 'deny', is_safe: false, matches: [hit], non_matches: [a] });
    expect(text(r)).toBe(JSON.stringify(r));
    hit.result.message = 'second';
    expect(text(r)).toBe(JSON.stringify(r));
    // A non-match that is not frozen (an evaluator's own outcome) is written each time.
    const open: ControlMatch = { control_id: 4, control_name: 'c-4', action: 'log', result: { matched: false, confidence: 0.9, message: 'one', metadata: null } };
    const o = result({ non_matches: [a, open] });
    expect(text(o)).toBe(JSON.stringify(o));
    open.result.message = 'two';
    expect(text(o)).toBe(JSON.stringify(o));
  });

  it('sends the kept bytes of a step in a session with that session spliced in', () => {
    const local = new AnswerWriter();
    const plainAllow = local.answer(result({ non_matches: [a, b] }));
    for (const session of [
      { id: 'run-1', labels: [] },
      { id: 'run-"2"\u2028é', labels: ['private_data', 'untrusted_content'] },
      { id: 'run-1', labels: ['x'] },
    ]) {
      const r = result({ non_matches: [a, b], session });
      expect(local.answer(r).toString('utf8')).toBe(JSON.stringify(r));
    }
    // The kept bytes themselves are left as they were.
    expect(local.answer(result({ non_matches: [a, b] }))).toBe(plainAllow);
    expect(plainAllow.toString('utf8')).toBe(JSON.stringify(result({ non_matches: [a, b] })));
  });

  it('never repeats an allow answer that carries shadow matches', () => {
    const quiet = result({ non_matches: [a, b] });
    expect(text(quiet)).toBe(JSON.stringify(quiet));
    const shadow: ControlMatch = { control_id: 13, control_name: 'c-13', action: 'deny', result: { matched: true, confidence: 1, message: null, metadata: null } };
    const withShadow = result({ non_matches: [a, b], shadow_matches: [shadow] });
    expect(text(withShadow)).toBe(JSON.stringify(withShadow));
    expect(text(quiet)).toBe(JSON.stringify(quiet));
  });
});

describe('property: every answer is JSON.stringify of its result', () => {
  // A small seeded generator (mulberry32), so a failure reproduces.
  function random(seed: number): () => number {
    let a = seed;
    return () => {
      a = (a + 0x6d2b79f5) | 0;
      let t = Math.imul(a ^ (a >>> 15), 1 | a);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const CHARS = ['a', 'Z', '0', ' ', '"', '\\', '\n', '\u0000', '\u2028', 'é', '😀', '\ud800', '</', '{'];

  it('holds over random results, repeated shapes, constant and changing entries', () => {
    const next = random(36);
    const pick = <T,>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
    const text = () => Array.from({ length: Math.floor(next() * 6) }, () => pick(CHARS)).join('');
    const metadata = (): Record<string, unknown> | null => (next() < 0.5 ? null : { k: text(), n: Math.floor(next() * 1e6) / 7, list: [true, null, text()], nested: { x: text() } });
    const constants = Array.from({ length: 8 }, (_, i) => constantRecord({ control_id: 100 + i, control_name: `k-${text()}`, action: pick(['deny', 'allow', 'log'] as const), result: { matched: false, confidence: 1, message: null, metadata: null } }));
    const fresh = (matched: boolean): ControlMatch => ({
      control_id: Math.floor(next() * 1000),
      control_name: text(),
      action: pick(['deny', 'steer', 'warn', 'log', 'allow'] as const),
      result: { matched, confidence: Math.floor(next() * 100) / 100, message: next() < 0.5 ? null : text(), metadata: metadata() },
      ...(next() < 0.3 ? { steering_context: { message: text(), ...(next() < 0.5 ? { required_actions: [text()] } : {}) } } : {}),
      ...(next() < 0.3 ? { error: text() } : {}),
      ...(next() < 0.2 ? { selector_missing: true as const } : {}),
    });
    const list = (make: () => ControlMatch, max: number) => Array.from({ length: Math.floor(next() * (max + 1)) }, make);
    const local = new AnswerWriter();
    const seen: EvaluationResult[] = [];
    for (let i = 0; i < 2000; i++) {
      // Half the time an earlier result again (the same objects, possibly changed since).
      const r: EvaluationResult =
        seen.length > 0 && next() < 0.5
          ? pick(seen)
          : {
              is_safe: next() < 0.7,
              decision: pick(['allow', 'deny', 'steer'] as const),
              confidence: pick([1, 0.5, 0.25]),
              steering_context: next() < 0.8 ? null : { message: text() },
              matches: next() < 0.7 ? [] : list(() => fresh(true), 2),
              errors: next() < 0.8 ? [] : list(() => fresh(false), 2),
              non_matches: list(() => (next() < 0.8 ? pick(constants) : fresh(false)), 5),
              shadow_matches: next() < 0.9 ? [] : list(() => fresh(true), 2),
              ...(next() < 0.3 ? { session: { id: text() || 's', labels: next() < 0.5 ? [] : [text(), text()] } } : {}),
            };
      seen.push(r);
      // Entries that are not the engine's constant records may change between answers.
      for (const m of [...r.matches, ...r.non_matches]) if (!Object.isFrozen(m) && next() < 0.2) m.result.message = text();
      expect(local.answer(r).toString('utf8')).toBe(JSON.stringify(r));
      expect(local.json(r)).toBe(JSON.stringify(r));
    }
  });
});
