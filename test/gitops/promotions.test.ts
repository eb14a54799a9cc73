import { describe, expect, it } from 'vitest';
import { ControlDataSchema, type ControlDataInput } from '../../src/model/index.js';
import { plan } from '../../src/gitops/plan.js';
import { promotionEffect, promotionLine, promotionsOf, withPromotionFigures, type Promotion } from '../../src/gitops/promotions.js';
import { ApiError } from '../../src/errors.js';

const data = (over: Partial<ControlDataInput> = {}) =>
  ControlDataSchema.parse({ selector: { path: 'output' }, evaluator: { name: 'regex', config: { pattern: 'x' } }, action: { decision: 'deny' }, ...over });

const owned = { managed_by: 'gitops:default', source: null, enabled: true };
const actual = {
  controls: [
    { control_id: 7, name: 'block-pii', data: data({ mode: 'shadow' }), ...owned },
    { control_id: 8, name: 'still-shadow', data: data({ mode: 'shadow' }), ...owned },
    { control_id: 9, name: 'to-shadow', data: data(), ...owned },
    { control_id: 10, name: 'steer-pii', data: data({ mode: 'shadow', action: { decision: 'steer', steering_context: { message: 'redact' } } }), ...owned },
  ],
  agents: [],
};

describe('promotionsOf', () => {
  it('finds controls whose mode goes from shadow to enforce, whether the key is set or removed', () => {
    const desired = {
      controls: [
        { name: 'block-pii', data: data({ mode: 'enforce' }), source: null },
        { name: 'still-shadow', data: data({ mode: 'shadow', description: 'changed' }), source: null },
        { name: 'to-shadow', data: data({ mode: 'shadow' }), source: null },
        // No mode key at all: enforced.
        { name: 'steer-pii', data: data({ action: { decision: 'steer', steering_context: { message: 'redact' } } }), source: null },
      ],
      agents: [],
    };
    const found = promotionsOf(plan(desired, actual), actual);
    expect(found).toEqual([
      { name: 'block-pii', control_id: 7, decision: 'deny', figures: null },
      { name: 'steer-pii', control_id: 10, decision: 'steer', figures: null },
    ]);
  });
});

describe('promotionEffect', () => {
  const promotion = (decision: Promotion['decision'], figures: Promotion['figures']): Promotion => ({ name: 'block-pii-in-output', control_id: 1, decision, figures });
  const figures = { time_range: '24h' as const, evaluated: 10_412, matched: 40, would_deny: 37, would_steer: 3 };

  it('says what the control would have done, with thousands separators', () => {
    expect(promotionLine(promotion('deny', figures))).toBe(
      '~ block-pii-in-output: mode shadow -> enforce (would have denied 37 of 10,412 steps in the last 24 h)',
    );
    expect(promotionEffect(promotion('steer', figures))).toBe('would have steered 3 of 10,412 steps in the last 24 h');
    expect(promotionEffect(promotion('log', figures))).toBe('would have matched 40 of 10,412 steps in the last 24 h');
    expect(promotionEffect(promotion('deny', { ...figures, evaluated: 0, would_deny: 0 }))).toBe('no steps evaluated in shadow mode in the last 24 h');
    expect(promotionEffect({ ...promotion('deny', null), unavailable: 'the server keeps no observability data' })).toBe(
      'no figures: the server keeps no observability data',
    );
  });
});

describe('withPromotionFigures', () => {
  const base: Promotion = { name: 'p', control_id: 3, decision: 'deny', figures: null };
  const row = { control_id: 3, control_name: 'p', executions: 5, matches: 2, non_matches: 3, errors: 0, actions: {}, avg_duration_ms: 0 };

  it('reads the 24 h shadow figures of each promoted control', async () => {
    const asked: Array<[number, unknown]> = [];
    const client = {
      controlStats: async (id: number, params: unknown) => {
        asked.push([id, params]);
        return { control_id: id, control_name: 'p', agent_name: null, time_range: '24h', stats: { ...row, shadow_executions: 5, shadow_matches: 2, would_deny: 2, would_steer: 0 } };
      },
    };
    expect(await withPromotionFigures(client, [base])).toEqual([
      { ...base, figures: { time_range: '24h', evaluated: 5, matched: 2, would_deny: 2, would_steer: 0 } },
    ]);
    expect(asked).toEqual([[3, { time_range: '24h' }]]);
  });

  it('says why there are no figures: no observability (404), or a server without shadow counts', async () => {
    const missing = { controlStats: async () => Promise.reject(new ApiError(404, { detail: 'no route GET /api/v1/observability/stats/controls/3' }, 'GET', 'http://s')) };
    expect((await withPromotionFigures(missing, [base]))[0]?.unavailable).toMatch(/no observability data/);
    const gone = { controlStats: async () => Promise.reject(new ApiError(404, { detail: 'no control has id "3"' }, 'GET', 'http://s')) };
    expect((await withPromotionFigures(gone, [base]))[0]?.unavailable).toBe('the server no longer has this control');
    const old = { controlStats: async () => ({ control_id: 3, control_name: 'p', agent_name: null, time_range: '24h', stats: row }) };
    expect((await withPromotionFigures(old, [base]))[0]?.unavailable).toMatch(/does not report shadow figures/);
  });

  it('raises other failures like the rest of the plan', async () => {
    const refused = { controlStats: async () => Promise.reject(new ApiError(401, null, 'GET', 'http://s')) };
    await expect(withPromotionFigures(refused, [base])).rejects.toBeInstanceOf(ApiError);
  });
});
