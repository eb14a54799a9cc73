/**
 * OpenTelemetry in the agent's own process, when the agent has it (docs/sdk.md, "Tracing").
 * `@opentelemetry/api` is an optional peer: imported on demand, and when it is missing
 * (or `tracer: false`) every method here answers null and nothing else happens. With it,
 * a check (1) sends the active span's context to the server as `traceparent` /
 * `tracestate`, so the server's `guardctl.evaluate` span is a child of the agent's own
 * span, and (2) wraps the evaluation of `execution: sdk` controls in a `guardctl.evaluate`
 * span of its own, from the global tracer provider (or the `tracer` option).
 */
import { EVALUATE_SPAN } from '../tracing/evaluation-span.js';
import { randomSpanId, randomTraceId } from '../tracing/random-ids.js';
import { traceparentOf } from '../tracing/trace-context.js';
import { SPAN_KIND, type SpanContextLike, type SpanLike, type TracerLike } from '../tracing/types.js';

/** The part of `@opentelemetry/api` read here (structural: no type import of an optional peer). */
interface OtelApi {
  context: { active(): unknown };
  trace: {
    getSpanContext(context: unknown): (SpanContextLike & { traceState?: { serialize(): string } }) | undefined;
    getTracer(name: string): TracerLike;
  };
}

let loading: Promise<OtelApi | null> | undefined;

/** `@opentelemetry/api` when the agent has it installed, else null; imported once per process. */
function loadOtelApi(): Promise<OtelApi | null> {
  return (loading ??= import('@opentelemetry/api').then(
    (api) => api as unknown as OtelApi,
    () => null,
  ));
}

export interface TraceIds {
  traceId: string;
  spanId: string;
}

/** The trace a check belongs to: the agent's active span, or fresh ids. */
export interface CheckTrace extends TraceIds {
  /** What the server request carries. */
  headers: { traceparent: string; tracestate?: string };
}

export class AgentTracing {
  readonly includeContent = process.env.GUARD_OTEL_INCLUDE_CONTENT?.trim().toLowerCase() === 'true';
  #api: OtelApi | null = null;
  #tracer: TracerLike | null = null;
  #loading: Promise<void> | null;

  /** `tracer`: the tracer of local spans (default: the global provider's); `false`: no tracing. */
  constructor(tracer: TracerLike | false | undefined) {
    this.#loading =
      tracer === false
        ? null
        : loadOtelApi().then((api) => {
            this.#api = api;
            this.#tracer = tracer ?? api?.trace.getTracer('guardctl') ?? null;
            this.#loading = null;
          });
  }

  /** Settles the optional import (the first check waits for it; later ones get null, nothing to await). */
  ready(): Promise<void> | null {
    return this.#loading;
  }

  /** The agent's active span as the check's trace, or null without one (or without the API). */
  active(): CheckTrace | null {
    const api = this.#api;
    const span = api?.trace.getSpanContext(api.context.active());
    if (!span || !/^[\da-f]{32}$/.test(span.traceId) || /^0+$/.test(span.traceId)) return null;
    const tracestate = span.traceState?.serialize();
    return {
      traceId: span.traceId,
      spanId: span.spanId,
      headers: tracestate ? { traceparent: traceparentOf(span), tracestate } : { traceparent: traceparentOf(span) },
    };
  }

  /** Whether in-process evaluations make spans (then they collect the executions a span describes). */
  get tracing(): boolean {
    return this.#tracer !== null || this.#loading !== null;
  }

  /**
   * The `guardctl.evaluate` span of an in-process evaluation that began at `startTime`
   * (epoch ms), a child of the active span; null without a tracer. Started once the
   * evaluation is done, so that a step no local control was in scope for makes no span.
   */
  localSpan(startTime: number): SpanLike | null {
    return this.#tracer?.startSpan(EVALUATE_SPAN, { kind: SPAN_KIND.internal, startTime }) ?? null;
  }
}

/** W3C trace-context ids for a check outside any trace. */
export function freshTraceIds(): TraceIds {
  return { traceId: randomTraceId(), spanId: randomSpanId() };
}

/** The `traceparent` of ids made here (sampled: the server's events and spans may keep them). */
export function traceparentOfIds(ids: TraceIds): string {
  return traceparentOf({ ...ids, traceFlags: 1 });
}
