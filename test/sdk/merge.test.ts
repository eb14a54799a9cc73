import { describe, expect, it } from 'vitest';
import type { ControlMatch, EvaluationResult } from '../../src/model/index.js';
import { decidingMatch, emptyResult, mergeResults } from '../../src/sdk/merge.js';

function match(id: number, action: ControlMatch['action'], steer?: string): ControlMatch {
  return {
    control_id: id,
    control_name: `c${id}`,
    action,
    result: { matched: true, confidence: 0.9, message: null, metadata: null },
    ...(steer !== undefined && { steering_context: { message: steer } }),
  };
}

function result(decision: EvaluationResult['decision'], matches: ControlMatch[]): EvaluationResult {
  const steer = matches.find((m) => m.action === 'steer');
  return {
    is_safe: decision !== 'deny',
    decision,
    confidence: decision === 'allow' ? 1 : 0.9,
    steering_context: decision === 'steer' ? (steer?.steering_context ?? null) : null,
    matches,
    errors: [],
    non_matches: [],
    shadow_matches: [],
  };
}

describe('mergeResults', () => {
  const cases: Array<[string, EvaluationResult, EvaluationResult | null, EvaluationResult['decision']]> = [
    ['no server result: the local one', result('steer', [match(1, 'steer', 'a')]), null, 'steer'],
    ['allow + allow', emptyResult(), emptyResult(), 'allow'],
    ['local deny beats server steer', result('deny', [match(1, 'deny')]), result('steer', [match(2, 'steer', 'b')]), 'deny'],
    ['server deny beats local steer', result('steer', [match(1, 'steer', 'a')]), result('deny', [match(2, 'deny')]), 'deny'],
    ['server steer beats local allow with warn', result('allow', [match(1, 'warn')]), result('steer', [match(2, 'steer', 'b')]), 'steer'],
    ['local steer beats server allow', result('steer', [match(3, 'steer', 'a')]), result('allow', [match(2, 'log')]), 'steer'],
  ];
  for (const [name, local, remote, decision] of cases) {
    it(name, () => {
      const merged = mergeResults(local, remote);
      expect(merged.decision).toBe(decision);
      expect(merged.is_safe).toBe(decision !== 'deny');
      expect(merged.steering_context === null).toBe(decision !== 'steer');
    });
  }

  it('takes the steering context of the first steer control in control order', () => {
    const merged = mergeResults(result('steer', [match(5, 'steer', 'local')]), result('steer', [match(2, 'steer', 'server')]));
    expect(merged.steering_context).toEqual({ message: 'server' });
    expect(merged.matches.map((m) => m.control_id)).toEqual([2, 5]);
    expect(decidingMatch(merged)?.control_name).toBe('c2');
  });

  it('keeps every match, error and non-match of both sides', () => {
    const local: EvaluationResult = { ...result('allow', [match(1, 'log')]), non_matches: [match(4, 'deny')] };
    const remote: EvaluationResult = { ...result('allow', []), errors: [match(3, 'deny')] };
    const merged = mergeResults(local, remote);
    expect(merged.matches).toHaveLength(1);
    expect(merged.errors.map((m) => m.control_id)).toEqual([3]);
    expect(merged.non_matches.map((m) => m.control_id)).toEqual([4]);
    expect(decidingMatch(merged)).toBeNull();
  });
});
