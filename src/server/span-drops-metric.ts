import { Counter } from 'prom-client';
import type { GuardMetrics } from '../observability/index.js';
import type { Tracing } from '../tracing/start.js';

/**
 * `<prefix>_otel_spans_dropped_total{reason}`: spans that never reached the collector,
 * read from the tracer when /metrics is scraped. `queue_full`: the collector was slower
 * than the spans came; `export_failed`: it did not take a batch.
 */
export function registerSpanDropsMetric(metrics: Pick<GuardMetrics, 'registry' | 'prefix'>, tracing: Pick<Tracing, 'dropped'>): void {
  new Counter({
    name: `${metrics.prefix}_otel_spans_dropped_total`,
    help: 'OpenTelemetry spans dropped before export: queue_full or export_failed',
    labelNames: ['reason'] as const,
    registers: [metrics.registry],
    collect() {
      const dropped = tracing.dropped();
      // A counter only goes up, and so do these totals: set each to the tracer's count.
      this.reset();
      this.inc({ reason: 'queue_full' }, dropped.queue_full);
      this.inc({ reason: 'export_failed' }, dropped.export_failed);
    },
  });
}
