/**
 * Spans of CLI commands (`guardctl apply`): with an OTLP endpoint in the environment
 * (the server's OTEL_* variables, docs/observability.md) the command is a span, the child
 * of the pipeline's `TRACEPARENT` (and `TRACESTATE`) when the CI system sets them, and
 * the span is exported before the command exits. Without an endpoint this loads nothing.
 */
import { tracingConfigOf } from '../src/tracing/config.js';
import { parseTraceparent } from '../src/tracing/trace-context.js';
import { SPAN_KIND, type SpanLike } from '../src/tracing/types.js';
import { packageVersion } from '../src/version.js';

export interface CommandSpan {
  span: SpanLike;
  /** Ends nothing: exports what was ended and stops (bounded, a dead collector must not hold the exit). */
  flush(): Promise<void>;
}

/** Starts the command's span, or null when tracing is not configured. Bad OTEL_* values throw their one-line error. */
export async function startCommandSpan(name: string, env: Record<string, string | undefined> = process.env): Promise<CommandSpan | null> {
  const config = tracingConfigOf(env);
  if (config === null) return null;
  const { startTracing } = await import('../src/tracing/start.js');
  const tracing = await startTracing(config, { serviceVersion: packageVersion() });
  const parent = parseTraceparent(env.TRACEPARENT?.toLowerCase(), env.TRACESTATE);
  return { span: tracing.startSpan(name, SPAN_KIND.internal, parent), flush: () => tracing.shutdown(5000) };
}
