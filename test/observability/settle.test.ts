import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { createObservability, type Observability } from '../../src/observability/observability.js';
import { metricsRoutes } from '../../src/server/routes/observability.js';
import type { RecordEvaluationInput } from '../../src/observability/record.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { makeConfig } from './fixtures.js';

/** An evaluation of one control that did not match, as the route hands it over. */
function evaluated(agent: string): RecordEvaluationInput {
  const nonMatch = { control_id: 1, control_name: 'block-sql', action: 'deny' as const, result: { matched: false, confidence: 1, message: null, metadata: null } };
  return {
    agent_name: agent,
    stage: 'pre',
    step: { type: 'tool', name: 'run_sql', input: {} },
    outcome: {
      result: { is_safe: true, decision: 'allow', confidence: 1, steering_context: null, matches: [], errors: [], non_matches: [nonMatch], shadow_matches: [] },
      executions: [
        { control_id: 1, control_name: 'block-sql', action: 'deny', matched: false, confidence: 1, error_message: null, evaluator_name: 'regex', selector_path: 'input', duration_ms: 0.01 },
      ],
    },
    trace: () => ({ trace_id: '0'.repeat(32), span_id: '0'.repeat(16) }),
  };
}

const counted = async (o: Observability) => {
  const text = await o.metrics.registry.getSingleMetricAsString('guard_evaluations_total');
  return Number(/\} (\d+)$/m.exec(text)?.[1] ?? 0);
};

let store: SqliteStore;
let o: Observability;
afterEach(async () => {
  await o.close();
  await store.close();
});

describe('evaluations are recorded once per event-loop turn', () => {
  const make = () => {
    store = new SqliteStore(':memory:');
    o = createObservability({ store, config: makeConfig(), processMetrics: false });
  };

  it('records the queue at the end of the turn, in order', async () => {
    make();
    for (let i = 0; i < 3; i++) o.recordEvaluation(evaluated('bot'));
    expect(await counted(o)).toBe(0);
    await new Promise((done) => setImmediate(done));
    expect(await counted(o)).toBe(3);
    expect(o.rollups.size).toBeGreaterThan(0);
  });

  it('settles before a flush, so flushed rollups hold every answered evaluation', async () => {
    make();
    for (let i = 0; i < 5; i++) o.recordEvaluation(evaluated('bot'));
    await o.flush();
    const stats = await store.controlStats({ since: new Date(Date.now() - 60_000).toISOString() });
    expect(stats.map((r) => [r.control_name, r.executions, r.non_matches])).toEqual([['block-sql', 5, 5]]);
  });

  it('records a long turn without waiting for its end, so the queue stays bounded', async () => {
    make();
    for (let i = 0; i < 300; i++) o.recordEvaluation(evaluated('bot'));
    expect(await counted(o)).toBe(256);
    o.settle();
    expect(await counted(o)).toBe(300);
  });

  it('counts evaluations of the current turn in a scrape', async () => {
    make();
    const app = Fastify();
    await app.register(metricsRoutes, { observability: o });
    await app.ready();
    o.recordEvaluation(evaluated('bot'));
    const res = await app.inject({ method: 'GET', url: '/metrics' });
    expect(res.body).toContain('guard_evaluations_total{agent="bot",decision="allow"} 1');
    await app.close();
  });
});
