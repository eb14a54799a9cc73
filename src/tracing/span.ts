/**
 * guardctl's own spans: a recording span is a small plain object that, when it ends, is
 * handed to a sink (the exporter, which encodes it at once and keeps only the bytes).
 * Times are nanoseconds since a clock anchor taken once per process (performance.now()
 * is monotonic and sub-microsecond; the anchor ties it to the epoch), kept as doubles:
 * exact to the nanosecond for 104 days of uptime, to a few nanoseconds after.
 */
import type { Attributes, SpanContextLike, SpanLike } from './types.js';

export interface SpanEventData {
  name: string;
  /** Nanoseconds since the clock anchor. */
  time: number;
  attributes: Attributes | undefined;
}

/** What an ended span says: everything the OTLP encoders read. */
export interface SpanData {
  name: string;
  /** `SpanKind` of @opentelemetry/api (0 internal, 1 server, 2 client, ...). */
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  traceState: string | undefined;
  /** Nanoseconds since the clock anchor (negative for a start time before it). */
  start: number;
  end: number;
  attributes: Attributes;
  events: SpanEventData[];
  status: { code: number; message?: string | undefined };
}

const anchorPerformance = performance.now();
/** The anchor in epoch nanoseconds (exact: a BigInt, read once). */
const anchorEpochNs = BigInt(Math.round(performance.timeOrigin * 1000)) * 1000n + BigInt(Math.round(anchorPerformance * 1e6));
const TWO_32 = 2 ** 32;
const anchorHi = Number(anchorEpochNs / BigInt(TWO_32));
const anchorLo = Number(anchorEpochNs % BigInt(TWO_32));
const anchorEpochMs = Number(anchorEpochNs / 1_000_000n);

/** Now, in nanoseconds since the clock anchor. */
export function nowNs(): number {
  return (performance.now() - anchorPerformance) * 1e6;
}

/** An epoch time in milliseconds (what OpenTelemetry's `startTime` is) in nanoseconds since the anchor. */
export function nsOfEpochMs(ms: number): number {
  return (ms - anchorEpochMs) * 1e6;
}

/**
 * Epoch nanoseconds of a clock time as the two 32-bit halves of a fixed64, without
 * BigInt (two allocations per time otherwise): the anchor's halves plus the offset's.
 */
export function epochNsHalves(ns: number): [lo: number, hi: number] {
  const offset = Math.round(ns);
  const offsetHi = Math.floor(offset / TWO_32);
  let lo = anchorLo + (offset - offsetHi * TWO_32);
  let hi = anchorHi + offsetHi;
  if (lo >= TWO_32) {
    lo -= TWO_32;
    hi += 1;
  }
  return [lo, hi];
}

/** Epoch nanoseconds of a clock time as decimal text (OTLP/JSON writes 64-bit integers as strings). */
export function epochNsText(ns: number): string {
  return (anchorEpochNs + BigInt(Math.round(ns))).toString();
}

/** What a span is started with: its identity and start, and the first attributes if any. */
export type RecordingSpanInit = Pick<SpanData, 'name' | 'kind' | 'traceId' | 'spanId' | 'parentSpanId' | 'traceState' | 'start'> & { attributes: Attributes | undefined };

/** A sampled span: records until `end()`, then goes to `sink` once; later calls change nothing. */
export class RecordingSpan implements SpanLike {
  readonly data: SpanData;
  #ended = false;
  /** No attributes yet (none at the start, none set). */
  #empty: boolean;
  /** The caller's object when it is the span's attributes as they are (copied before any second set). */
  #shared: Attributes | null = null;
  readonly #sink: (span: SpanData) => void;

  constructor(init: RecordingSpanInit, sink: (span: SpanData) => void) {
    this.data = {
      name: init.name,
      kind: init.kind,
      traceId: init.traceId,
      spanId: init.spanId,
      parentSpanId: init.parentSpanId,
      traceState: init.traceState,
      start: init.start,
      end: init.start,
      attributes: init.attributes ? { ...init.attributes } : {},
      events: [],
      status: { code: 0 },
    };
    this.#sink = sink;
    this.#empty = init.attributes === undefined;
  }

  setAttributes(attributes: Attributes): this {
    if (this.#ended) return this;
    // The first set is kept as it is, not copied: the span is encoded when it ends, and
    // guardctl's callers describe a span in a fresh object they do not touch again.
    if (this.#shared === null && this.#empty) {
      this.data.attributes = attributes;
      this.#shared = attributes;
    } else {
      if (this.#shared !== null) {
        this.data.attributes = { ...this.#shared };
        this.#shared = null;
      }
      Object.assign(this.data.attributes, attributes);
    }
    this.#empty = false;
    return this;
  }

  addEvent(name: string, attributes?: Attributes): this {
    if (!this.#ended) this.data.events.push({ name, time: nowNs(), attributes });
    return this;
  }

  setStatus(status: { code: number; message?: string }): this {
    // Only an error carries a message (OpenTelemetry's rule).
    if (!this.#ended) this.data.status = status.code === 2 ? { code: 2, message: status.message } : { code: status.code };
    return this;
  }

  isRecording(): boolean {
    return !this.#ended;
  }

  spanContext(): SpanContextLike {
    return { traceId: this.data.traceId, spanId: this.data.spanId, traceFlags: 1 };
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.data.end = nowNs();
    this.#sink(this.data);
  }
}

/** What is handed out for a span that is not sampled: it records nothing and costs nothing. */
export const NOT_RECORDING: SpanLike = {
  setAttributes: () => undefined,
  addEvent: () => undefined,
  setStatus: () => undefined,
  isRecording: () => false,
  spanContext: () => ({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 }),
  end: () => undefined,
};
