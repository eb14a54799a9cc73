/**
 * The part of the OpenTelemetry API guardctl's spans use, as plain structural types, so
 * that code which only describes spans (and the SDK's public options) needs no import of
 * `@opentelemetry/api`, an optional peer. An `@opentelemetry/api` Tracer is a TracerLike.
 * PURE: types and constants only.
 */

export type AttributeValue = string | number | boolean | string[] | number[];
export type Attributes = Record<string, AttributeValue>;

export interface SpanContextLike {
  traceId: string;
  spanId: string;
  traceFlags: number;
}

export interface SpanLike {
  setAttributes(attributes: Attributes): unknown;
  addEvent(name: string, attributes?: Attributes): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  isRecording(): boolean;
  spanContext(): SpanContextLike;
  end(): void;
}

export interface TracerLike {
  startSpan(name: string, options?: { kind?: number; attributes?: Attributes; startTime?: number }, context?: unknown): SpanLike;
}

/** `SpanKind` of @opentelemetry/api. */
export const SPAN_KIND = { internal: 0, server: 1, client: 2 } as const;
/** `SpanStatusCode` of @opentelemetry/api. */
export const SPAN_STATUS = { unset: 0, ok: 1, error: 2 } as const;
