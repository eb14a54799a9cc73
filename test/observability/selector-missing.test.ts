import { afterEach, describe, expect, it } from 'vitest';
import { compileControls, evaluateStep, type EvaluationOutcome } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { ControlDataSchema, type Step } from '../../src/model/index.js';
import { createObservability, type Observability } from '../../src/observability/observability.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { makeConfig, makeEvent } from './fixtures.js';

const set = compileControls(
  [{
    control_id: 7,
    name: 'block-drop',
    data: ControlDataSchema.parse({
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: 'drop' } },
      action: { decision: 'deny' },
    }),
  }],
  createDefaultRegistry(),
);

let observability: Observability;
let store: SqliteStore;
const warnings: Array<{ obj: object; msg: string | undefined }> = [];

function open(): Observability {
  warnings.length = 0;
  store = new SqliteStore(':memory:');
  observability = createObservability({
    store,
    config: makeConfig(),
    processMetrics: false,
    logger: { warn: (obj, msg) => warnings.push({ obj, msg }), error: () => undefined },
  });
  return observability;
}

function record(step: Step): void {
  const outcome = evaluateStep(set, step, 'pre', { collectExecutions: true }) as EvaluationOutcome;
  observability.recordEvaluation({
    agent_name: 'sql-bot', stage: 'pre', step, outcome,
    trace: () => ({ trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16) }),
  });
}

afterEach(async () => {
  await observability.close();
  await store.close();
});

describe('selector_missing on the server', () => {
  it('counts every step and warns once per control', async () => {
    open();
    record({ type: 'tool', name: 'run_sql', input: { sql: 'drop table x' } });
    record({ type: 'tool', name: 'run_sql', input: { sql: 'select 1' } });
    record({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } });
    observability.settle();
    const text = await observability.metrics.registry.metrics();
    expect(text).toContain('guard_selector_missing_total{agent="sql-bot",control="block-drop"} 2');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain('control "block-drop" found nothing at input.query in step "run_sql"');
    expect(warnings[0]!.obj).toMatchObject({ control_id: 7, selector_path: 'input.query', agent_name: 'sql-bot' });
    await observability.flush();
    const [row] = await store.controlStats({ since: new Date(Date.now() - 60_000).toISOString() });
    expect(row).toMatchObject({ executions: 3, non_matches: 3, selector_missing: 2 });
  });

  it('counts the events an SDK reports', async () => {
    open();
    observability.ingest([
      makeEvent(1, { matched: false, selector_missing: true, metadata: { source: 'sdk', step_name: 'run_sql' } }),
      makeEvent(3, { matched: false, selector_missing: true }),
      makeEvent(5, { matched: false }),
    ]);
    const text = await observability.metrics.registry.metrics();
    expect(text).toContain('guard_selector_missing_total{agent="support-bot",control="block-sql"} 2');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain('in step "run_sql"');
  });
});
