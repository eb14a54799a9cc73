/**
 * Issue #34 item 10: the server reports agents evaluated with no controls (every step
 * allowed unchecked): a counter by agent, and a warning once per agent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { blockDrop } from '../adapters/guarded-agent.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';
import { compileControls, evaluateStep, type EvaluationOutcome } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { createObservability, type Observability } from '../../src/observability/observability.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { makeConfig } from './fixtures.js';

describe('the unguarded evaluations counter', () => {
  let server: RunningServer;
  afterEach(async () => {
    await server.close();
  });

  it('counts evaluations of agents without controls, by agent, and not the others', async () => {
    server = await startRealServer();
    await server.client.initAgent({ agent_name: 'bare-bot' });
    await server.client.initAgent({ agent_name: 'guarded-bot' });
    await addControl(server.client, 'guarded-bot', 'block-drop', blockDrop);
    for (const agent_name of ['bare-bot', 'bare-bot', 'guarded-bot']) {
      await server.client.evaluate({ agent_name, stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE orders' } } });
    }
    await expect.poll(async () => (await fetch(`${server.url}/metrics`)).text()).toContain('guard_unguarded_evaluations_total{agent="bare-bot"} 2');
    expect(await (await fetch(`${server.url}/metrics`)).text()).not.toContain('guard_unguarded_evaluations_total{agent="guarded-bot"}');
  });
});

describe('the unguarded warning', () => {
  let observability: Observability;
  let store: SqliteStore;
  afterEach(async () => {
    await observability.close();
    await store.close();
  });

  it('is logged once per agent', () => {
    const warnings: Array<{ obj: object; msg: string | undefined }> = [];
    store = new SqliteStore(':memory:');
    observability = createObservability({ store, config: makeConfig(), processMetrics: false, logger: { warn: (obj, msg) => warnings.push({ obj, msg }), error: () => undefined } });
    const empty = compileControls([], createDefaultRegistry());
    const step = { type: 'tool' as const, name: 'run_sql', input: null };
    for (const agent_name of ['bare-bot', 'bare-bot', 'other-bot']) {
      const outcome = evaluateStep(empty, step, 'pre', { collectExecutions: true }) as EvaluationOutcome;
      observability.recordEvaluation({ agent_name, stage: 'pre', step, outcome, unguarded: true, trace: () => ({ trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16) }) });
    }
    observability.settle();
    expect(warnings.map((w) => w.msg)).toEqual([
      expect.stringContaining('agent "bare-bot" was evaluated with no controls'),
      expect.stringContaining('agent "other-bot" was evaluated with no controls'),
    ]);
    expect(warnings[0]!.obj).toMatchObject({ agent_name: 'bare-bot' });
  });
});
