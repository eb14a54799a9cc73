import { randomSpanId, randomTraceId } from '../tracing/random-ids.js';

export interface TraceIds {
  trace_id: string;
  span_id: string;
}

type Headers = Record<string, string | string[] | undefined>;

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-([\da-f]{16})-[\da-f]{2}$/;
const ID = /^[\w.:-]{1,128}$/;

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The trace and span an evaluation belongs to: W3C `traceparent` first, then
 * `x-trace-id` / `x-span-id`, else fresh ids, so that events of one agent run can be
 * joined with the agent's own traces.
 */
export function traceIdsFromHeaders(headers: Headers): TraceIds {
  const parent = header(headers, 'traceparent');
  const match = parent ? TRACEPARENT.exec(parent.trim().toLowerCase()) : null;
  if (match) return { trace_id: match[1]!, span_id: match[2]! };
  const traceId = header(headers, 'x-trace-id');
  const spanId = header(headers, 'x-span-id');
  if (traceId && ID.test(traceId) && spanId && ID.test(spanId)) return { trace_id: traceId, span_id: spanId };
  return {
    trace_id: traceId && ID.test(traceId) ? traceId : randomTraceId(),
    span_id: spanId && ID.test(spanId) ? spanId : randomSpanId(),
  };
}
