/**
 * W3C trace context (`traceparent`, `tracestate`) read and written by hand: the server,
 * the CLI (`TRACEPARENT` from a CI pipeline) and the SDK need it whether or not a
 * propagator is registered. An invalid `traceparent` is no parent at all: the span starts
 * a new trace. PURE.
 */
import type { SpanContextLike } from './types.js';

export interface RemoteParent extends SpanContextLike {
  /** The raw `tracestate` to carry on, when one came with a valid `traceparent`. */
  traceState: string | undefined;
}

const TRACEPARENT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);
/** The specification bounds tracestate at 32 entries; 512 characters is what is propagated at least. */
const MAX_TRACESTATE = 512;

/** The parent a `traceparent` names, or null when it is absent or invalid. */
export function parseTraceparent(traceparent: string | undefined, tracestate?: string): RemoteParent | null {
  if (traceparent === undefined) return null;
  const match = TRACEPARENT.exec(traceparent.trim());
  if (!match) return null;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  // Version ff is forbidden; version 00 has no further fields; later versions may add some.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  const state = tracestate?.trim();
  return {
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16) & 0x01,
    traceState: state && state.length <= MAX_TRACESTATE ? state : undefined,
  };
}

/** The `traceparent` of a span context. */
export function traceparentOf(context: SpanContextLike): string {
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

type Headers = Record<string, string | string[] | undefined>;

function header(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The parent of a request's span: its `traceparent` (and `tracestate`), else null. */
export function parentOfHeaders(headers: Headers): RemoteParent | null {
  const traceparent = header(headers, 'traceparent');
  return traceparent === undefined ? null : parseTraceparent(traceparent.toLowerCase(), header(headers, 'tracestate'));
}
