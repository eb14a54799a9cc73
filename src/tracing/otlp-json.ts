/**
 * OTLP/HTTP JSON bodies (OTEL_EXPORTER_OTLP_PROTOCOL=http/json): the protobuf messages in
 * protobuf's JSON mapping as OTLP defines it: ids as hex, 64-bit integers (times, ints)
 * as decimal strings, enums as numbers. A span becomes its JSON text when it ends; an
 * export joins the texts of a batch into one request. PURE.
 */
import type { Attributes } from './types.js';
import { epochNsText, type SpanData } from './span.js';

const INT64_LIMIT = 2 ** 63;

function anyValueJson(value: unknown): string | null {
  if (typeof value === 'string') return `{"stringValue":${JSON.stringify(value)}}`;
  if (typeof value === 'boolean') return `{"boolValue":${value}}`;
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= -INT64_LIMIT && value < INT64_LIMIT) return `{"intValue":"${BigInt(value)}"}`;
    // JSON has no NaN or infinities; protobuf's JSON mapping names them.
    return `{"doubleValue":${Number.isFinite(value) ? String(value) : `"${Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity'}"`}}`;
  }
  if (Array.isArray(value)) {
    const values = (value as unknown[]).map(anyValueJson).filter((v) => v !== null);
    return `{"arrayValue":{"values":[${values.join(',')}]}}`;
  }
  return null;
}

/** A KeyValue list; an attribute without a value is left out. */
export function attributesJson(attributes: Attributes | undefined): string {
  const parts: string[] = [];
  if (attributes !== undefined) {
    for (const key in attributes) {
      const value = anyValueJson(attributes[key]);
      if (value !== null) parts.push(`{"key":${JSON.stringify(key)},"value":${value}}`);
    }
  }
  return `[${parts.join(',')}]`;
}

/** One span as OTLP/JSON text (OTLP's SpanKind counts from 1, the API's from 0). */
export function spanJson(span: SpanData): string {
  const events = span.events.map((e) => `{"timeUnixNano":"${epochNsText(e.time)}","name":${JSON.stringify(e.name)},"attributes":${attributesJson(e.attributes)}}`);
  const status = span.status.code === 0 ? '{}' : `{"code":${span.status.code}${span.status.message ? `,"message":${JSON.stringify(span.status.message)}` : ''}}`;
  return (
    `{"traceId":"${span.traceId}","spanId":"${span.spanId}"` +
    (span.traceState ? `,"traceState":${JSON.stringify(span.traceState)}` : '') +
    (span.parentSpanId !== undefined ? `,"parentSpanId":"${span.parentSpanId}"` : '') +
    `,"name":${JSON.stringify(span.name)},"kind":${span.kind + 1}` +
    `,"startTimeUnixNano":"${epochNsText(span.start)}","endTimeUnixNano":"${epochNsText(span.end)}"` +
    `,"attributes":${attributesJson(span.attributes)},"events":[${events.join(',')}],"status":${status}}`
  );
}

/** The parts of an ExportTraceServiceRequest around the span texts, made once. */
export function jsonRequestParts(resource: Attributes, scopeName: string, scopeVersion: string | undefined): { head: string; tail: string } {
  const scope = `{"name":${JSON.stringify(scopeName)}${scopeVersion ? `,"version":${JSON.stringify(scopeVersion)}` : ''}}`;
  return {
    head: `{"resourceSpans":[{"resource":{"attributes":${attributesJson(resource)}},"scopeSpans":[{"scope":${scope},"spans":[`,
    tail: ']}]}]}',
  };
}
