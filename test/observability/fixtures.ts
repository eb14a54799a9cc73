import type { ObservabilityEvent } from '../../src/model/index.js';
import type { ObservabilityConfig } from '../../src/observability/index.js';

export function makeEvent(i: number, overrides: Partial<ObservabilityEvent> = {}): ObservabilityEvent {
  return {
    control_execution_id: `exec-${i}`,
    trace_id: `trace-${i % 10}`,
    span_id: `span-${i}`,
    agent_name: 'support-bot',
    control_id: 1,
    control_name: 'block-sql',
    check_stage: 'pre',
    applies_to: 'tool',
    action: 'deny',
    matched: i % 2 === 0,
    confidence: 1,
    timestamp: new Date().toISOString(),
    execution_duration_ms: 0.05,
    evaluator_name: 'regex',
    selector_path: 'input.query',
    error_message: null,
    metadata: null,
    ...overrides,
  };
}

export function makeConfig(overrides: Partial<ObservabilityConfig> = {}): ObservabilityConfig {
  return {
    observabilityEnabled: true,
    flushIntervalSeconds: 3600,
    metricsPrefix: 'guard',
    eventRetentionDays: 30,
    eventBufferSize: 10_000,
    ...overrides,
  };
}

/** Every metric the app registers, without the prefix (process metrics aside). */
export const METRIC_NAMES = [
  'http_requests_total',
  'http_request_duration_seconds',
  'evaluations_total',
  'control_matches_total',
  'evaluation_duration_seconds',
  'evaluator_errors_total',
  'selector_missing_total',
  'unguarded_evaluations_total',
  'mcp_tool_drift_total',
  'controls',
  'events_buffered',
  'events_written_total',
  'events_dropped_total',
  'reloads_total',
  'stream_subscribers',
  'stream_subscribers_dropped_total',
] as const;
