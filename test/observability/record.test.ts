import { describe, expect, it } from 'vitest';
import type { ControlExecution } from '../../src/engine/api.js';
import { EvaluationSummarySchema, ObservabilityEventSchema, type EvaluationResult } from '../../src/model/index.js';
import { eventsOf, executionsOf, summaryOf, type RecordEvaluationInput } from '../../src/observability/record.js';

const result: EvaluationResult = {
  is_safe: false,
  decision: 'deny',
  confidence: 1,
  steering_context: null,
  matches: [
    {
      control_id: 1,
      control_name: 'block-sql',
      action: 'deny',
      result: { matched: true, confidence: 1, message: 'matched DROP', metadata: { severity: 'high' } },
    },
  ],
  errors: [
    {
      control_id: 3,
      control_name: 'scorer',
      action: 'log',
      result: { matched: false, confidence: 0, message: null, metadata: null },
      error: 'timeout',
    },
  ],
  non_matches: [
    { control_id: 2, control_name: 'pii', action: 'warn', result: { matched: false, confidence: 1, message: null, metadata: null } },
  ],
  shadow_matches: [],
};

const executions: ControlExecution[] = [
  { control_id: 1, control_name: 'block-sql', action: 'deny', matched: true, confidence: 1, error_message: null, evaluator_name: 'regex', selector_path: 'input.query', duration_ms: 0.02 },
  { control_id: 2, control_name: 'pii', action: 'warn', matched: false, confidence: 1, error_message: null, evaluator_name: 'list', selector_path: 'input', duration_ms: 0.01 },
  { control_id: 3, control_name: 'scorer', action: 'log', matched: false, confidence: 0, error_message: 'timeout', evaluator_name: 'ai_vendor.scorer', selector_path: 'output', duration_ms: 5 },
];

const input: RecordEvaluationInput = {
  agent_name: 'support-bot',
  stage: 'pre',
  step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } },
  outcome: { result, executions },
  trace: () => ({ trace_id: 'trace-1', span_id: 'span-1' }),
};

describe('eventsOf', () => {
  it('makes one valid event per control evaluated, carrying the request ids and step facts', () => {
    const events = eventsOf(input, executions, '2026-01-01T00:00:00.000Z');
    expect(events).toHaveLength(3);
    for (const e of events) expect(ObservabilityEventSchema.safeParse(e).success).toBe(true);
    expect(events[0]).toMatchObject({
      trace_id: 'trace-1',
      span_id: 'span-1',
      agent_name: 'support-bot',
      control_id: 1,
      check_stage: 'pre',
      applies_to: 'tool',
      action: 'deny',
      matched: true,
      evaluator_name: 'regex',
      selector_path: 'input.query',
      metadata: { severity: 'high' },
      execution_duration_ms: 0.02,
    });
    expect(events[2]).toMatchObject({ error_message: 'timeout', metadata: null });
    expect(new Set(events.map((e) => e.control_execution_id)).size).toBe(3);
  });

  it('rebuilds executions from the result when the engine did not collect them', () => {
    const rebuilt = executionsOf({ ...input, outcome: { result, executions: null } });
    expect(rebuilt.map((x) => [x.control_id, x.matched, x.error_message])).toEqual([
      [1, true, null],
      [3, false, 'timeout'],
      [2, false, null],
    ]);
  });
});

describe('summaryOf', () => {
  it('builds a valid stream summary with an excerpt of the selected value, masked whole when the engine gave none', () => {
    const summary = summaryOf(input, input.trace(), executions, 5.03, '2026-01-01T00:00:00.000Z');
    expect(EvaluationSummarySchema.safeParse(summary).success).toBe(true);
    expect(summary).toMatchObject({ decision: 'deny', evaluated: 3, step_name: 'run_sql', agent_name: 'support-bot' });
    expect(summary.matches[0]).toMatchObject({ control_id: 1, message: 'matched DROP', excerpt: 'DROP…sers' });
    expect(summary.errors).toEqual([{ control_id: 3, control_name: 'scorer', message: 'timeout' }]);
  });
});
