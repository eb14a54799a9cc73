/**
 * Observability: per-control events (buffered, batched into the store), statistics,
 * the live stream for dashboards and Prometheus metrics. It speaks no HTTP: the server
 * wires these pieces (src/server/routes/observability.ts, src/server/http-metrics.ts);
 * evaluation calls `recordEvaluation`, which never waits on I/O.
 */
export type { ObservabilityConfig } from './config.js';
export { OBSERVABILITY_DEFAULTS } from './config.js';
export type { RecordEvaluationInput, Observability, ObservabilityLogger, CreateObservabilityOptions } from './observability.js';
export { createObservability } from './observability.js';
export type { GuardMetrics } from './metrics.js';
export { createMetrics } from './metrics.js';
export type { EventHub, StreamFilter, StreamSubscriber } from './event-hub.js';
export { createEventHub } from './event-hub.js';
export { EventBuffer } from './event-buffer.js';
export { NonMatchRollups } from './non-match-rollups.js';
export { TIME_RANGES, timeRangeMs } from './schemas.js';
export { counterUseOf, registerCounterMetrics, MAX_LISTED_KEYS, type CounterUse, type CounterUseSource } from './counter-use.js';
