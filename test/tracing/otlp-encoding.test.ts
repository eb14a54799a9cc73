/**
 * guardctl's own OTLP encoders: protobuf bytes read back by a decoder written here, apart
 * from the encoder (64-bit varints as BigInt, so int64 and double stay apart), and the
 * JSON text parsed as JSON.
 */
import { describe, expect, it } from 'vitest';
import { jsonRequestParts, spanJson } from '../../src/tracing/otlp-json.js';
import { encodeSpanEntry, exportHeaderOf, exportRequestBody, ProtoWriter } from '../../src/tracing/otlp-protobuf.js';
import { nowNs, nsOfEpochMs, type SpanData } from '../../src/tracing/span.js';
import type { Attributes } from '../../src/tracing/types.js';

interface Field {
  no: number;
  wire: number;
  varint: bigint;
  bytes: Buffer;
}

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[at++];
      if (byte === undefined) throw new Error('truncated varint');
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
      shift += 7n;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const no = key >> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ no, wire, varint: varint(), bytes: Buffer.alloc(0) });
    else if (wire === 1) {
      out.push({ no, wire, varint: 0n, bytes: buf.subarray(at, at + 8) });
      at += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      if (at + length > buf.length) throw new Error('length past the end');
      out.push({ no, wire, varint: 0n, bytes: buf.subarray(at, at + length) });
      at += length;
    } else throw new Error(`wire type ${wire}`);
  }
  return out;
}

type Decoded = { string: string } | { bool: boolean } | { int: bigint } | { double: number } | { array: Decoded[] } | null;

function anyValue(buf: Buffer): Decoded {
  const [f] = fields(buf);
  if (f === undefined) return null;
  if (f.no === 1) return { string: f.bytes.toString('utf8') };
  if (f.no === 2) return { bool: f.varint !== 0n };
  if (f.no === 3) return { int: BigInt.asIntN(64, f.varint) };
  if (f.no === 4) return { double: f.bytes.readDoubleLE(0) };
  if (f.no === 5) return { array: fields(f.bytes).map((v) => anyValue(v.bytes)) };
  throw new Error(`AnyValue field ${f.no}`);
}

function keyValues(list: Field[], no: number): Record<string, Decoded> {
  const out: Record<string, Decoded> = {};
  for (const kv of list.filter((f) => f.no === no)) {
    const parts = fields(kv.bytes);
    out[parts.find((p) => p.no === 1)!.bytes.toString('utf8')] = anyValue(parts.find((p) => p.no === 2)!.bytes);
  }
  return out;
}

function spanData(attributes: Attributes, extra: Partial<SpanData> = {}): SpanData {
  const start = nowNs();
  return {
    name: 'guardctl.evaluate',
    kind: 1,
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    spanId: '00f067aa0ba902b7',
    parentSpanId: undefined,
    traceState: undefined,
    start,
    end: start + 1500,
    attributes,
    events: [],
    status: { code: 0 },
    ...extra,
  };
}

/** The one span of a whole request body, decoded down to its fields. */
function decodeRequest(body: Buffer) {
  const [resourceSpans, ...more] = fields(body);
  expect(more).toEqual([]);
  const rs = fields(resourceSpans!.bytes);
  const resource = keyValues(fields(rs.find((f) => f.no === 1)!.bytes), 1);
  const ss = fields(rs.find((f) => f.no === 2)!.bytes);
  const scope = fields(ss.find((f) => f.no === 1)!.bytes).map((f) => f.bytes.toString('utf8'));
  const spans = ss.filter((f) => f.no === 2).map((f) => fields(f.bytes));
  return { resource, scope, spans };
}

const header = exportHeaderOf({ 'service.name': 'guard-test', 'service.version': '1.2.3' }, 'guardctl', '1.2.3');

function roundTrip(attributes: Attributes, extra: Partial<SpanData> = {}) {
  const w = new ProtoWriter();
  const body = exportRequestBody(header, [encodeSpanEntry(w, spanData(attributes, extra))]);
  const { spans } = decodeRequest(body);
  return spans[0]!;
}

describe('the protobuf encoder', () => {
  it('wraps spans in one ExportTraceServiceRequest with the resource and the guardctl scope', () => {
    const w = new ProtoWriter();
    const entries = [encodeSpanEntry(w, spanData({ a: 1 })), encodeSpanEntry(w, spanData({ a: 2 }))];
    const { resource, scope, spans } = decodeRequest(exportRequestBody(header, entries));
    expect(resource).toEqual({ 'service.name': { string: 'guard-test' }, 'service.version': { string: '1.2.3' } });
    expect(scope).toEqual(['guardctl', '1.2.3']);
    expect(spans.map((s) => keyValues(s, 9))).toEqual([{ a: { int: 1n } }, { a: { int: 2n } }]);
  });

  it('writes ids as bytes, OTLP kinds (API + 1), times as fixed64 epoch nanoseconds', () => {
    const span = roundTrip({}, { parentSpanId: 'aaaaaaaaaaaaaaaa', traceState: 'vendor=a,other=b' });
    const one = (no: number) => span.find((f) => f.no === no)!;
    expect(one(1).bytes.toString('hex')).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(one(2).bytes.toString('hex')).toBe('00f067aa0ba902b7');
    expect(one(3).bytes.toString('utf8')).toBe('vendor=a,other=b');
    expect(one(4).bytes.toString('hex')).toBe('aaaaaaaaaaaaaaaa');
    expect(one(5).bytes.toString('utf8')).toBe('guardctl.evaluate');
    expect(one(6).varint).toBe(2n);
    const start = one(7).bytes.readBigUInt64LE(0);
    const end = one(8).bytes.readBigUInt64LE(0);
    expect(end - start).toBe(1500n);
    const epochNs = BigInt(Date.now()) * 1_000_000n;
    expect(start > epochNs - 5_000_000_000n && start < epochNs + 5_000_000_000n).toBe(true);
    // No status field when unset: proto3 leaves defaults out.
    expect(span.some((f) => f.no === 15)).toBe(false);
  });

  it('writes a start time given in epoch milliseconds from before the process started', () => {
    const tenSecondsAgo = Date.now() - 10_000;
    const span = roundTrip({}, { start: nsOfEpochMs(tenSecondsAgo) });
    const start = span.find((f) => f.no === 7)!.bytes.readBigUInt64LE(0);
    const expected = BigInt(tenSecondsAgo) * 1_000_000n;
    expect(start > expected - 1_000_000n && start < expected + 1_000_000n).toBe(true);
  });

  it('keeps unicode strings, empty strings and long strings intact', () => {
    const long = 'x'.repeat(20_000);
    const attrs = keyValues(roundTrip({ jp: '日本語 🚀 é', empty: '', long, lone: 'a\ud800b' }), 9);
    expect(attrs.jp).toEqual({ string: '日本語 🚀 é' });
    expect(attrs.empty).toEqual({ string: '' });
    expect(attrs.long).toEqual({ string: long });
    // A lone surrogate is not UTF-8: it becomes U+FFFD, the body stays valid.
    expect(attrs.lone).toEqual({ string: 'a\ufffdb' });
  });

  it('tells ints from doubles, writes negative ints as 64-bit two\'s complement, keeps large values', () => {
    const attrs = keyValues(
      roundTrip({ zero: 0, three: 3, half: 3.5, minus: -7, min: -(2 ** 63), big: 2 ** 53 + 2, huge: 1e20, nan: NaN, inf: -Infinity, yes: true, no: false }),
      9,
    );
    expect(attrs).toEqual({
      zero: { int: 0n },
      three: { int: 3n },
      half: { double: 3.5 },
      minus: { int: -7n },
      min: { int: -(2n ** 63n) },
      big: { int: 2n ** 53n + 2n },
      huge: { double: 1e20 },
      nan: { double: NaN },
      inf: { double: -Infinity },
      yes: { bool: true },
      no: { bool: false },
    });
    const w = new ProtoWriter();
    w.int64(-1);
    expect(w.bytes().toString('hex')).toBe('ffffffffffffffffff01');
  });

  it('writes arrays, empty ones included, and leaves out attributes without a value', () => {
    const attrs = keyValues(roundTrip({ names: ['a', 'b'], none: [], nums: [1, 2.5], gone: undefined as unknown as string }), 9);
    expect(attrs).toEqual({
      names: { array: [{ string: 'a' }, { string: 'b' }] },
      none: { array: [] },
      nums: { array: [{ int: 1n }, { double: 2.5 }] },
    });
  });

  it('writes events with their times and the error status with its message', () => {
    const base = spanData({});
    const span = roundTrip({}, { events: [{ name: 'guardctl.control.matched', time: base.start + 10, attributes: { 'guardctl.control.id': 4 } }], status: { code: 2, message: 'evaluator error' } });
    const [event] = span.filter((f) => f.no === 11).map((f) => fields(f.bytes));
    expect(event!.find((f) => f.no === 2)!.bytes.toString('utf8')).toBe('guardctl.control.matched');
    expect(event!.find((f) => f.no === 1)!.wire).toBe(1);
    expect(keyValues(event!, 3)).toEqual({ 'guardctl.control.id': { int: 4n } });
    const status = fields(span.find((f) => f.no === 15)!.bytes);
    expect(status.find((f) => f.no === 3)!.varint).toBe(2n);
    expect(status.find((f) => f.no === 2)!.bytes.toString('utf8')).toBe('evaluator error');
  });

  it('gives nested messages past 127 bytes their longer length prefix (many attributes, one event of 300 bytes)', () => {
    const attributes: Attributes = {};
    for (let i = 0; i < 200; i++) attributes[`guardctl.attribute.${i}`] = `value ${i} ${'é'.repeat(i)}`;
    const span = roundTrip(attributes, { events: [{ name: 'e', time: 0, attributes: { text: 'y'.repeat(300) } }] });
    expect(Object.keys(keyValues(span, 9))).toHaveLength(200);
    expect(keyValues(span, 9)['guardctl.attribute.199']).toEqual({ string: `value 199 ${'é'.repeat(199)}` });
  });

  it('encodes any number of distinct keys, unicode ones included, past what it remembers of keys', () => {
    const attributes: Attributes = { 'clé.日本': 'v' };
    for (let i = 0; i < 1500; i++) attributes[`key.${i}.${'k'.repeat(i % 150)}`] = i;
    const decoded = keyValues(roundTrip(attributes), 9);
    expect(Object.keys(decoded)).toHaveLength(1501);
    expect(decoded['clé.日本']).toEqual({ string: 'v' });
    expect(decoded[`key.1499.${'k'.repeat(1499 % 150)}`]).toEqual({ int: 1499n });
    // Again, now that some keys are remembered and the rest are not.
    expect(keyValues(roundTrip(attributes), 9)).toEqual(decoded);
  });
});

describe('the JSON encoder', () => {
  it('writes OTLP/JSON: hex ids, times and ints as decimal strings, kinds from 1, valid JSON whatever the keys', () => {
    const { head, tail } = jsonRequestParts({ 'service.name': 'guard-test' }, 'guardctl', '1.2.3');
    const base = spanData({});
    const span = spanData(
      { 'quote"key\\': 'line\nbreak', count: -3, ratio: 0.25, flag: false, names: ['a'], none: [], nan: NaN },
      { parentSpanId: 'aaaaaaaaaaaaaaaa', events: [{ name: 'ev', time: base.start, attributes: undefined }], status: { code: 2, message: 'boom' } },
    );
    const body = JSON.parse(`${head}${[spanJson(span), spanJson(spanData({}))].join(',')}${tail}`) as {
      resourceSpans: { resource: { attributes: unknown[] }; scopeSpans: { scope: unknown; spans: Record<string, unknown>[] }[] }[];
    };
    const [rs] = body.resourceSpans;
    expect(rs!.resource.attributes).toEqual([{ key: 'service.name', value: { stringValue: 'guard-test' } }]);
    expect(rs!.scopeSpans[0]!.scope).toEqual({ name: 'guardctl', version: '1.2.3' });
    const [first, second] = rs!.scopeSpans[0]!.spans;
    expect(first).toMatchObject({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', parentSpanId: 'aaaaaaaaaaaaaaaa', name: 'guardctl.evaluate', kind: 2, status: { code: 2, message: 'boom' } });
    expect(BigInt(first!.endTimeUnixNano as string) - BigInt(first!.startTimeUnixNano as string)).toBe(1500n);
    expect(first!.attributes).toEqual([
      { key: 'quote"key\\', value: { stringValue: 'line\nbreak' } },
      { key: 'count', value: { intValue: '-3' } },
      { key: 'ratio', value: { doubleValue: 0.25 } },
      { key: 'flag', value: { boolValue: false } },
      { key: 'names', value: { arrayValue: { values: [{ stringValue: 'a' }] } } },
      { key: 'none', value: { arrayValue: { values: [] } } },
      { key: 'nan', value: { doubleValue: 'NaN' } },
    ]);
    expect(first!.events).toEqual([{ timeUnixNano: expect.stringMatching(/^\d{19}$/) as unknown, name: 'ev', attributes: [] }]);
    expect(second).not.toHaveProperty('parentSpanId');
    expect(second!.status).toEqual({});
  });
});
