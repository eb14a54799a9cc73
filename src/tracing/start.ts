/**
 * The OpenTelemetry SDK of a process that exports spans (the server, `guardctl apply`):
 * a tracer provider of its own (never the global one, so a process holding two servers
 * keeps two), the configured sampler, and a batch processor exporting over OTLP/HTTP. The
 * SDK is imported here, on demand: a process without tracing never loads it.
 *
 * The queue is bounded and never waits: a span that finds it full is dropped, and so is a
 * batch the collector did not take (unreachable, slow past the timeout, refusing). Both
 * are counted (`dropped()`, `<prefix>_otel_spans_dropped_total`).
 */
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Sampler, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { UserError } from '../errors.js';
import type { OtlpProtocol, TracingConfig } from './config.js';
import type { RemoteParent } from './trace-context.js';
import type { SpanLike, TracerLike } from './types.js';

/** Spans waiting for export at most; past it new spans are dropped. */
export const MAX_QUEUED_SPANS = 2048;
const BATCH_SIZE = 512;
const EXPORT_DELAY_MS = 1000;

export interface SpanDrops {
  /** The queue was full (the collector is slower than the spans come). */
  queue_full: number;
  /** The collector did not take a batch (unreachable, timed out, refused). */
  export_failed: number;
}

export interface Tracing {
  readonly config: TracingConfig;
  readonly tracer: TracerLike;
  /** Starts a span, the child of `parent` when there is one, else the root of a new trace. */
  startSpan(name: string, kind: number, parent: RemoteParent | null): SpanLike;
  dropped(): SpanDrops;
  /** Exports what waits; bounded by the export timeout. */
  forceFlush(): Promise<void>;
  /** Exports what waits and stops; waits at most `timeoutMs` (a dead collector must not hold a shutdown). */
  shutdown(timeoutMs?: number): Promise<void>;
}

export interface StartTracingOptions {
  /** Recorded as the resource's service.version. */
  serviceVersion?: string;
}

type Modules = Awaited<ReturnType<typeof loadModules>>;

async function loadModules(protocol: OtlpProtocol) {
  const [api, base, resources, Exporter] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    exporterFor(protocol),
  ]);
  return { api, base, resources, Exporter };
}

/** The OTLP/HTTP exporter of the configured encoding; both take the same options. */
async function exporterFor(protocol: OtlpProtocol) {
  const module = protocol === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto');
  return module.OTLPTraceExporter;
}

/** Loads the OpenTelemetry SDK and builds the exporting tracer `config` describes. */
export async function startTracing(config: TracingConfig, options: StartTracingOptions = {}): Promise<Tracing> {
  let modules: Modules;
  try {
    modules = await loadModules(config.protocol);
  } catch (error) {
    throw new UserError(
      `tracing is configured (OTEL_EXPORTER_OTLP_ENDPOINT) but the OpenTelemetry packages cannot be loaded: ${error instanceof Error ? error.message : String(error)}`,
      'reinstall guardctl (npm install), or unset OTEL_EXPORTER_OTLP_ENDPOINT / set OTEL_SDK_DISABLED=true',
    );
  }
  const { api, base, resources, Exporter } = modules;
  const drops: SpanDrops = { queue_full: 0, export_failed: 0 };
  let accepted = 0;
  let handedOver = 0;

  const otlp = new Exporter({ url: config.endpoint, headers: { ...config.headers }, timeoutMillis: config.timeoutMs });
  const counting: SpanExporter = {
    export(spans, done) {
      handedOver += spans.length;
      otlp.export(spans, (result) => {
        // ExportResultCode.SUCCESS is 0 (not imported: @opentelemetry/core is the SDK's own dependency).
        if ((result.code as number) !== 0) drops.export_failed += spans.length;
        done(result);
      });
    },
    shutdown: () => otlp.shutdown(),
    forceFlush: () => otlp.forceFlush(),
  };
  const batch = new base.BatchSpanProcessor(counting, {
    maxQueueSize: MAX_QUEUED_SPANS,
    maxExportBatchSize: BATCH_SIZE,
    scheduledDelayMillis: EXPORT_DELAY_MS,
    exportTimeoutMillis: config.timeoutMs + 1000,
  });
  // The batch processor drops spans past its queue silently; this gate in front of it
  // holds the same bound (spans accepted minus spans handed to the exporter) and counts.
  const gate: SpanProcessor = {
    onStart() {},
    onEnd(span: ReadableSpan) {
      if ((span.spanContext().traceFlags & 1) === 0) return;
      if (accepted - handedOver >= MAX_QUEUED_SPANS) {
        drops.queue_full++;
        return;
      }
      accepted++;
      batch.onEnd(span);
    },
    forceFlush: () => batch.forceFlush(),
    shutdown: () => batch.shutdown(),
  };
  const provider = new base.BasicTracerProvider({
    resource: resources.resourceFromAttributes({
      'service.name': config.serviceName,
      ...(options.serviceVersion ? { 'service.version': options.serviceVersion } : {}),
    }),
    sampler: samplerOf(config, modules),
    spanProcessors: [gate],
  });
  const tracer = provider.getTracer('guardctl', options.serviceVersion);
  const root = api.ROOT_CONTEXT;
  const contextOf = (parent: RemoteParent | null): Context =>
    parent === null
      ? root
      : api.trace.setSpanContext(root, {
          traceId: parent.traceId,
          spanId: parent.spanId,
          traceFlags: parent.traceFlags,
          isRemote: true,
          ...(parent.traceState !== undefined ? { traceState: api.createTraceState(parent.traceState) } : {}),
        });

  const unsampled = unsampledTest(config);
  let stopped: Promise<void> | undefined;
  return {
    config,
    tracer,
    startSpan: (name, kind, parent) => (unsampled(parent) ? NOT_RECORDING : tracer.startSpan(name, { kind }, contextOf(parent))),
    dropped: () => ({ ...drops }),
    forceFlush: () => provider.forceFlush(),
    shutdown: (timeoutMs = 5000) =>
      (stopped ??= new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        timer.unref();
        provider.shutdown().then(
          () => resolve(),
          () => resolve(),
        ).finally(() => clearTimeout(timer));
      })),
  };
}

/** What startSpan hands out for a span that is not sampled: it records nothing and costs nothing. */
const NOT_RECORDING: SpanLike = {
  setAttributes: () => undefined,
  addEvent: () => undefined,
  setStatus: () => undefined,
  isRecording: () => false,
  spanContext: () => ({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 }),
  end: () => undefined,
};

/**
 * Decides the spans that will not be sampled before the SDK is asked: starting a span
 * (ids drawn, a sampler consulted, a span object built) costs microseconds even when it
 * ends up not recorded, and with `traceidratio` at 0.01 that is 99 evaluations in 100. A
 * new trace (no parent) under a ratio sampler is kept with the ratio's probability, drawn
 * here (the SDK sampler then keeps every root it is handed, see samplerOf); a parent-based
 * sampler drops what the caller did not sample. Everything else goes to the SDK's sampler.
 */
function unsampledTest(config: TracingConfig): (parent: RemoteParent | null) => boolean {
  const ratio = config.samplerRatio;
  const parentSampled = (parent: RemoteParent) => (parent.traceFlags & 1) === 1;
  switch (config.sampler) {
    case 'always_on':
      return () => false;
    case 'always_off':
      return () => true;
    case 'traceidratio':
      return (parent) => parent === null && Math.random() >= ratio;
    case 'parentbased_always_on':
      return (parent) => parent !== null && !parentSampled(parent);
    case 'parentbased_always_off':
      return (parent) => parent === null || !parentSampled(parent);
    case 'parentbased_traceidratio':
      return (parent) => (parent === null ? Math.random() >= ratio : !parentSampled(parent));
  }
}

function samplerOf(config: TracingConfig, { base, api }: Modules): Sampler {
  const ratio = new base.TraceIdRatioBasedSampler(config.samplerRatio);
  const always = new base.AlwaysOnSampler();
  switch (config.sampler) {
    case 'always_on':
      return always;
    case 'always_off':
      return new base.AlwaysOffSampler();
    case 'traceidratio':
      // Roots were drawn by unsampledTest already; a span with a parent is decided by its trace id.
      return {
        shouldSample: (context, traceId) => (api.trace.getSpanContext(context) ? ratio.shouldSample(context, traceId) : always.shouldSample()),
        toString: () => `TraceIdRatioBased{${config.samplerRatio}} (roots drawn by guardctl)`,
      };
    case 'parentbased_always_on':
      return new base.ParentBasedSampler({ root: always });
    case 'parentbased_always_off':
      return new base.ParentBasedSampler({ root: new base.AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new base.ParentBasedSampler({ root: always });
  }
}
