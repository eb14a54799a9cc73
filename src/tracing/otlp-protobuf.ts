/**
 * OTLP/HTTP protobuf bodies, written by hand: the wire format (varints, length-delimited
 * fields, fixed64) of the opentelemetry-proto messages guardctl sends, by field number
 * (collector/trace/v1, trace/v1, common/v1, resource/v1). A span is encoded once, when it
 * ends, into the bytes of one `ScopeSpans.spans` entry; an export puts the entries of a
 * batch behind one precomputed ExportTraceServiceRequest header. PURE.
 */
import type { Attributes } from './types.js';
import { epochNsHalves, type SpanData } from './span.js';

const LENGTH_DELIMITED = 2;
const FIXED64 = 1;
const VARINT = 0;
const INT64_LIMIT = 2 ** 63;
/** Up to this length a string is tried as ASCII first. */
const SHORT_STRING = 128;

/**
 * A growing buffer. A nested message's length is not known before its content: one byte
 * is reserved for it (most of guardctl's are under 128 bytes), and the rare longer one
 * moves its content to make room for a longer varint.
 */
export class ProtoWriter {
  #buf = Buffer.allocUnsafe(4096);
  #at = 0;

  reset(): void {
    this.#at = 0;
  }

  /** A copy of what was written. */
  bytes(): Buffer {
    const out = Buffer.allocUnsafe(this.#at);
    this.#buf.copy(out, 0, 0, this.#at);
    return out;
  }

  #room(n: number): void {
    if (this.#at + n <= this.#buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#at + n));
    this.#buf.copy(bigger, 0, 0, this.#at);
    this.#buf = bigger;
  }

  /** A non-negative integer below 2^53. */
  varint(value: number): void {
    this.#room(10);
    const buf = this.#buf;
    let v = value;
    while (v >= 128) {
      buf[this.#at++] = (v % 128) | 128;
      v = Math.floor(v / 128);
    }
    buf[this.#at++] = v;
  }

  /** An int64 as protobuf writes it: two's complement, so a negative one takes ten bytes. */
  int64(value: number): void {
    if (value >= 0 && value <= Number.MAX_SAFE_INTEGER) {
      this.varint(value);
      return;
    }
    let v = BigInt.asUintN(64, BigInt(value));
    this.#room(10);
    while (v >= 128n) {
      this.#buf[this.#at++] = Number(v & 127n) | 128;
      v >>= 7n;
    }
    this.#buf[this.#at++] = Number(v);
  }

  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  /** Opens a length-delimited field; `close` with what this returns. */
  open(field: number): number {
    this.tag(field, LENGTH_DELIMITED);
    this.#room(1);
    return this.#at++;
  }

  close(mark: number): void {
    const length = this.#at - mark - 1;
    if (length < 128) {
      this.#buf[mark] = length;
      return;
    }
    const size = varintSize(length);
    this.#room(size - 1);
    this.#buf.copyWithin(mark + size, mark + 1, this.#at);
    this.#at += size - 1;
    const end = this.#at;
    this.#at = mark;
    this.varint(length);
    this.#at = end;
  }

  string(field: number, text: string): void {
    const mark = this.open(field);
    this.#utf8(text);
    this.close(mark);
  }

  /**
   * guardctl's strings are mostly short ASCII (attribute keys, names, decisions): copied
   * char by char they cost a fraction of Buffer#write's call; anything else goes to it.
   */
  #utf8(text: string): void {
    const length = text.length;
    this.#room(length * 3);
    const buf = this.#buf;
    const start = this.#at;
    if (length <= SHORT_STRING) {
      let i = 0;
      for (; i < length; i++) {
        const c = text.charCodeAt(i);
        if (c >= 0x80) break;
        buf[start + i] = c;
      }
      if (i === length) {
        this.#at = start + length;
        return;
      }
    }
    this.#at = start + buf.write(text, start, 'utf8');
  }

  /** Hex (trace and span ids, validated where they come from) as bytes. */
  hex(field: number, text: string): void {
    const size = text.length >> 1;
    this.tag(field, LENGTH_DELIMITED);
    this.varint(size);
    this.#room(size);
    const buf = this.#buf;
    for (let i = 0; i < size; i++) buf[this.#at++] = (nibble(text.charCodeAt(2 * i)) << 4) | nibble(text.charCodeAt(2 * i + 1));
  }

  fixed64(field: number, lo: number, hi: number): void {
    this.tag(field, FIXED64);
    this.#room(8);
    this.#buf.writeUInt32LE(lo, this.#at);
    this.#buf.writeUInt32LE(hi, this.#at + 4);
    this.#at += 8;
  }

  double(field: number, value: number): void {
    this.tag(field, FIXED64);
    this.#room(8);
    this.#buf.writeDoubleLE(value, this.#at);
    this.#at += 8;
  }

  raw(bytes: Uint8Array): void {
    this.#room(bytes.length);
    this.#buf.set(bytes, this.#at);
    this.#at += bytes.length;
  }
}

/** A hex digit's value (either case). */
function nibble(c: number): number {
  return c <= 57 ? c - 48 : (c | 32) - 87;
}

export function varintSize(value: number): number {
  let size = 1;
  for (let v = value; v >= 128; v = Math.floor(v / 128)) size++;
  return size;
}

/** AnyValue: 1 string, 2 bool, 3 int64, 4 double, 5 ArrayValue (1 values). A whole number in int64's range is an int. */
function writeAnyValue(w: ProtoWriter, field: number, value: unknown): void {
  const mark = w.open(field);
  if (typeof value === 'string') w.string(1, value);
  else if (typeof value === 'boolean') {
    w.tag(2, VARINT);
    w.varint(value ? 1 : 0);
  } else if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= -INT64_LIMIT && value < INT64_LIMIT) {
      w.tag(3, VARINT);
      w.int64(value);
    } else w.double(4, value);
  } else if (Array.isArray(value)) {
    const array = w.open(5);
    for (const item of value as unknown[]) if (item !== null && item !== undefined) writeAnyValue(w, 1, item);
    w.close(array);
  }
  w.close(mark);
}

/**
 * The `key` field of a KeyValue, encoded once per key: guardctl's attribute keys are a
 * fixed few. Bounded all the same, in case a caller's keys are not.
 */
const keyFields = new Map<string, Buffer>();
const MAX_KEY_FIELDS = 1024;

/** The key's encoded field, or undefined once the cache is full and the key is not in it. */
function keyField(key: string): Buffer | undefined {
  let bytes = keyFields.get(key);
  if (bytes === undefined && keyFields.size < MAX_KEY_FIELDS) {
    const byteLength = Buffer.byteLength(key);
    bytes = Buffer.allocUnsafe(1 + varintSize(byteLength) + byteLength);
    bytes[0] = 0x0a; // field 1, length-delimited
    let at = 1;
    for (let v = byteLength; ; v = Math.floor(v / 128)) {
      if (v < 128) {
        bytes[at++] = v;
        break;
      }
      bytes[at++] = (v % 128) | 128;
    }
    bytes.write(key, at, 'utf8');
    keyFields.set(key, bytes);
  }
  return bytes;
}

/** Repeated KeyValue (1 key, 2 value); an attribute without a value is left out (OpenTelemetry's rule). */
export function writeAttributes(w: ProtoWriter, field: number, attributes: Attributes | undefined): void {
  if (attributes === undefined) return;
  for (const key in attributes) {
    const value = attributes[key];
    if (value === undefined || value === null) continue;
    const mark = w.open(field);
    const keyBytes = keyField(key);
    if (keyBytes === undefined) w.string(1, key);
    else w.raw(keyBytes);
    writeAnyValue(w, 2, value);
    w.close(mark);
  }
}

/** OTLP's SpanKind counts from 1 (UNSPECIFIED is 0); the API's from 0. */
const otlpKind = (kind: number) => kind + 1;

/**
 * One span as a `ScopeSpans.spans` (field 2) entry. Span: 1 trace_id, 2 span_id,
 * 3 trace_state, 4 parent_span_id, 5 name, 6 kind, 7/8 start/end (fixed64 ns),
 * 9 attributes, 11 events (1 time, 2 name, 3 attributes), 15 status (2 message, 3 code).
 */
export function encodeSpanEntry(w: ProtoWriter, span: SpanData): Buffer {
  w.reset();
  const entry = w.open(2);
  w.hex(1, span.traceId);
  w.hex(2, span.spanId);
  if (span.traceState) w.string(3, span.traceState);
  if (span.parentSpanId !== undefined) w.hex(4, span.parentSpanId);
  w.string(5, span.name);
  w.tag(6, VARINT);
  w.varint(otlpKind(span.kind));
  const [startLo, startHi] = epochNsHalves(span.start);
  w.fixed64(7, startLo, startHi);
  const [endLo, endHi] = epochNsHalves(span.end);
  w.fixed64(8, endLo, endHi);
  writeAttributes(w, 9, span.attributes);
  for (const event of span.events) {
    const mark = w.open(11);
    const [lo, hi] = epochNsHalves(event.time);
    w.fixed64(1, lo, hi);
    w.string(2, event.name);
    writeAttributes(w, 3, event.attributes);
    w.close(mark);
  }
  if (span.status.code !== 0) {
    const mark = w.open(15);
    if (span.status.message) w.string(2, span.status.message);
    w.tag(3, VARINT);
    w.varint(span.status.code);
    w.close(mark);
  }
  w.close(entry);
  return w.bytes();
}

export interface ExportHeader {
  /** Resource (1 attributes), encoded once. */
  resource: Buffer;
  /** InstrumentationScope (1 name, 2 version), encoded once. */
  scope: Buffer;
}

export function exportHeaderOf(resource: Attributes, scopeName: string, scopeVersion: string | undefined): ExportHeader {
  const w = new ProtoWriter();
  writeAttributes(w, 1, resource);
  const resourceBytes = w.bytes();
  w.reset();
  w.string(1, scopeName);
  if (scopeVersion) w.string(2, scopeVersion);
  return { resource: resourceBytes, scope: w.bytes() };
}

function lengthPrefixed(field: number, length: number): Buffer {
  const w = new ProtoWriter();
  w.tag(field, LENGTH_DELIMITED);
  w.varint(length);
  return w.bytes();
}

/**
 * ExportTraceServiceRequest{1 ResourceSpans{1 Resource, 2 ScopeSpans{1 scope, 2 spans...}}}
 * around span entries from `encodeSpanEntry`: the lengths are sums, nothing is re-encoded.
 */
export function exportRequestBody(header: ExportHeader, entries: readonly Buffer[]): Buffer {
  const scope = Buffer.concat([lengthPrefixed(1, header.scope.length), header.scope]);
  let scopeSpansLength = scope.length;
  for (const entry of entries) scopeSpansLength += entry.length;
  const resource = Buffer.concat([lengthPrefixed(1, header.resource.length), header.resource]);
  const scopeSpansHead = lengthPrefixed(2, scopeSpansLength);
  const resourceSpansLength = resource.length + scopeSpansHead.length + scopeSpansLength;
  return Buffer.concat([lengthPrefixed(1, resourceSpansLength), resource, scopeSpansHead, scope, ...entries]);
}
