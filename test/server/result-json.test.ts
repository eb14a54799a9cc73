import { describe, expect, it } from 'vitest';
import type { ControlMatch, EvaluationResult } from '../../src/model/index.js';
import { evaluationResultJson } from '../../src/server/result-json.js';

const plain = (id: number): ControlMatch =>
  Object.freeze({ control_id: id, control_name: `c-${id}`, action: 'deny', result: Object.freeze({ matched: false, confidence: 1, message: null, metadata: null }) });

function result(over: Partial<EvaluationResult>): EvaluationResult {
  return { is_safe: true, decision: 'allow', confidence: 1, steering_context: null, matches: [], errors: [], non_matches: [], ...over };
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

  it('writes null for a confidence that is not a finite number', () => {
    expect(JSON.parse(evaluationResultJson(result({ confidence: Number.NaN }))).confidence).toBeNull();
  });
});
