/**
 * The tracer of a process that exports spans (the server, `guardctl apply`): guardctl's
 * own, not the OpenTelemetry SDK's, which cost about 10 µs of CPU per span on the
 * server's hot path (span objects, attribute checks, a batch processor, a generic OTLP
 * transformer). Here a sampled span is a small object encoded into OTLP bytes when it
 * ends (span-export.ts); a span not sampled is one shared object that records nothing.
 * Each call of startTracing has its own queue and exporter: a process holding two servers
 * keeps two.
 *
 * The queue is bounded and never waits: a span that finds it full is dropped, and so is a
 * batch the collector did not take (unreachable, slow past the timeout, refusing). Both
 * are counted (`dropped()`, `<prefix>_otel_spans_dropped_total`).
 */
import type { TracingConfig } from './config.js';
import { randomSpanId, randomTraceId } from './random-ids.js';
import { samplerOf } from './sampler.js';
import { createSpanExporter, type SpanDrops } from './span-export.js';
import { NOT_RECORDING, nowNs, nsOfEpochMs, RecordingSpan, type SpanData } from './span.js';
import type { RemoteParent } from './trace-context.js';
import type { Attributes, SpanLike, TracerLike } from './types.js';

export { MAX_QUEUED_SPANS, type SpanDrops } from './span-export.js';

/** The instrumentation scope of every span guardctl exports. */
export const SCOPE_NAME = 'guardctl';

export interface Tracing {
  readonly config: TracingConfig;
  /** Starts root spans, OpenTelemetry-style (`startSpan(name, { kind, attributes, startTime })`). */
  readonly tracer: TracerLike;
  /** Starts a span, the child of `parent` when there is one, else the root of a new trace. */
  startSpan(name: string, kind: number, parent: RemoteParent | null): SpanLike;
  dropped(): SpanDrops;
  /** Exports what waits; bounded by the export timeout. */
  forceFlush(): Promise<void>;
  /** Exports what waits and stops, its export thread ended; waits at most `timeoutMs` for the collector (a dead one must not hold a shutdown). */
  shutdown(timeoutMs?: number): Promise<void>;
}

export interface StartTracingOptions {
  /** Recorded as the resource's service.version and the scope's version. */
  serviceVersion?: string;
}

/** Builds the exporting tracer `config` describes. Async as it always was: callers await it. */
export function startTracing(config: TracingConfig, options: StartTracingOptions = {}): Promise<Tracing> {
  const exporter = createSpanExporter({
    endpoint: config.endpoint,
    headers: config.headers,
    protocol: config.protocol,
    timeoutMs: config.timeoutMs,
    scheduleDelayMs: config.scheduleDelayMs,
    resource: { 'service.name': config.serviceName, ...(options.serviceVersion ? { 'service.version': options.serviceVersion } : {}) },
    scopeName: SCOPE_NAME,
    scopeVersion: options.serviceVersion,
  });
  const sampled = samplerOf(config.sampler, config.samplerRatio);
  const sink = (span: SpanData) => exporter.onEnd(span);
  const never = config.sampler === 'always_off';

  const startSpan = (name: string, kind: number, parent: RemoteParent | null, start?: number, attributes?: Attributes): SpanLike => {
    if (never) return NOT_RECORDING;
    const traceId = parent === null ? randomTraceId() : parent.traceId;
    if (!sampled(parent, traceId)) return NOT_RECORDING;
    return new RecordingSpan(
      {
        name,
        kind,
        traceId,
        spanId: randomSpanId(),
        parentSpanId: parent?.spanId,
        traceState: parent?.traceState,
        start: start ?? nowNs(),
        attributes,
      },
      sink,
    );
  };

  let stopped: Promise<void> | undefined;
  return Promise.resolve({
    config,
    tracer: {
      startSpan: (name, spanOptions) =>
        startSpan(name, spanOptions?.kind ?? 0, null, spanOptions?.startTime === undefined ? undefined : nsOfEpochMs(spanOptions.startTime), spanOptions?.attributes),
    },
    startSpan: (name, kind, parent) => startSpan(name, kind, parent),
    dropped: () => exporter.dropped(),
    forceFlush: () => exporter.flush(),
    shutdown: (timeoutMs = 5000) =>
      (stopped ??= new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref();
        void exporter.flush().finally(() => {
          clearTimeout(timer);
          resolve();
        });
      }).finally(() => exporter.stop())),
  });
}
