/**
 * A real OTLP/HTTP receiver for tests: a node:http server on a free port that takes
 * `POST /v1/traces` with a protobuf body (`application/x-protobuf`, what guardctl sends by
 * default) or a JSON body (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`), decodes either into
 * the same spans, and records the encoding of each request. Anything else is recorded as
 * an error, so a test fails loudly. The protobuf decoder reads the wire format of the
 * OTLP trace messages by field number (opentelemetry-proto, trace/v1 and common/v1).
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';

export type Attr = string | number | boolean | Attr[] | null;

export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  traceState: string;
  kind: number;
  attributes: Record<string, Attr>;
  events: { name: string; attributes: Record<string, Attr> }[];
  status: { code: number; message?: string };
  resource: Record<string, Attr>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpKeyValue {
  key: string;
  value: OtlpValue;
}

function valueOf(v: OtlpValue): Attr {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(valueOf);
  return null;
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, Attr> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

/** One field of a protobuf message: varints as numbers, fixed64 as their 8 bytes, length-delimited as bytes. */
interface WireField {
  no: number;
  varint: number;
  bytes: Buffer;
}

function* wireFields(buf: Buffer): Generator<WireField> {
  let at = 0;
  const varint = (): number => {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = buf[at++];
      if (byte === undefined) throw new Error('truncated varint');
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
  };
  while (at < buf.length) {
    const key = varint();
    const no = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) yield { no, varint: varint(), bytes: Buffer.alloc(0) };
    else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      yield { no, varint: 0, bytes: buf.subarray(at, at + size) };
      at += size;
    } else if (wire === 2) {
      const length = varint();
      yield { no, varint: 0, bytes: buf.subarray(at, at + length) };
      at += length;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
}

/** AnyValue: 1 string, 2 bool, 3 int, 4 double, 5 array (ArrayValue: 1 values). */
function protoValue(buf: Buffer): Attr {
  for (const f of wireFields(buf)) {
    if (f.no === 1) return f.bytes.toString('utf8');
    if (f.no === 2) return f.varint !== 0;
    if (f.no === 3) return f.varint;
    if (f.no === 4) return f.bytes.readDoubleLE(0);
    if (f.no === 5) return [...wireFields(f.bytes)].filter((v) => v.no === 1).map((v) => protoValue(v.bytes));
  }
  return null;
}

/** Repeated KeyValue (1 key, 2 value) at field `no` of a message. */
function protoAttributes(fields: WireField[], no: number): Record<string, Attr> {
  const out: Record<string, Attr> = {};
  for (const f of fields) {
    if (f.no !== no) continue;
    let key = '';
    let value: Attr = null;
    for (const kv of wireFields(f.bytes)) {
      if (kv.no === 1) key = kv.bytes.toString('utf8');
      else if (kv.no === 2) value = protoValue(kv.bytes);
    }
    out[key] = value;
  }
  return out;
}

/** ExportTraceServiceRequest: resource_spans(1) > resource(1) and scope_spans(2) > spans(2). */
function protoSpans(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of wireFields(body)) {
    if (rs.no !== 1) continue;
    const rsFields = [...wireFields(rs.bytes)];
    const resourceField = rsFields.find((f) => f.no === 1);
    const resource = resourceField ? protoAttributes([...wireFields(resourceField.bytes)], 1) : {};
    for (const ss of rsFields.filter((f) => f.no === 2)) {
      for (const sp of wireFields(ss.bytes)) {
        if (sp.no !== 2) continue;
        const f = [...wireFields(sp.bytes)];
        const one = (no: number) => f.find((x) => x.no === no);
        const statusFields = one(15) ? [...wireFields(one(15)!.bytes)] : [];
        const message = statusFields.find((x) => x.no === 2)?.bytes.toString('utf8');
        spans.push({
          name: one(5)?.bytes.toString('utf8') ?? '',
          traceId: one(1)?.bytes.toString('hex') ?? '',
          spanId: one(2)?.bytes.toString('hex') ?? '',
          parentSpanId: one(4)?.bytes.toString('hex') ?? '',
          traceState: one(3)?.bytes.toString('utf8') ?? '',
          kind: one(6)?.varint ?? 0,
          attributes: protoAttributes(f, 9),
          events: f
            .filter((x) => x.no === 11)
            .map((e) => {
              const ef = [...wireFields(e.bytes)];
              return { name: ef.find((x) => x.no === 2)?.bytes.toString('utf8') ?? '', attributes: protoAttributes(ef, 3) };
            }),
          status: { code: statusFields.find((x) => x.no === 3)?.varint ?? 0, ...(message !== undefined ? { message } : {}) },
          resource,
        });
      }
    }
  }
  return spans;
}

/** OTLP/JSON: the same messages with hex ids and camelCase fields. */
function jsonSpans(body: Buffer): ReceivedSpan[] {
  const parsed = JSON.parse(body.toString('utf8')) as {
    resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
  };
  const spans: ReceivedSpan[] = [];
  for (const rs of parsed.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        spans.push({
          name: s.name as string,
          traceId: s.traceId as string,
          spanId: s.spanId as string,
          parentSpanId: (s.parentSpanId as string | undefined) ?? '',
          traceState: (s.traceState as string | undefined) ?? '',
          kind: s.kind as number,
          attributes: attributesOf(s.attributes as OtlpKeyValue[]),
          events: ((s.events as { name: string; attributes?: OtlpKeyValue[] }[] | undefined) ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
          status: (s.status as { code: number; message?: string } | undefined) ?? { code: 0 },
          resource,
        });
      }
    }
  }
  return spans;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  headers: IncomingHttpHeaders[];
  errors: string[];
  /** The encoding of each request received: `protobuf` or `json`. */
  encodings: Array<'protobuf' | 'json'>;
  /** Answers requests this long after they arrive (a slow collector). */
  delayMs: number;
  /** Resolves once `predicate` holds of the spans received (polls; rejects after `timeoutMs`). */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver = { spans: [] as ReceivedSpan[], headers: [] as IncomingHttpHeaders[], errors: [] as string[], encodings: [] as Array<'protobuf' | 'json'>, delayMs: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receiver.headers.push(req.headers);
      const type = req.headers['content-type'] ?? '';
      const encoding = type.includes('application/x-protobuf') ? 'protobuf' : type.includes('json') ? 'json' : null;
      if (req.url !== '/v1/traces' || encoding === null) {
        receiver.errors.push(`${req.method} ${req.url} ${type}`);
        res.writeHead(415).end();
        return;
      }
      receiver.encodings.push(encoding);
      try {
        const body = Buffer.concat(chunks);
        receiver.spans.push(...(encoding === 'protobuf' ? protoSpans(body) : jsonSpans(body)));
      } catch (error) {
        receiver.errors.push(String(error));
      }
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), receiver.delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}`,
    async waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number) {
      // While waiting, the poll reads what arrived so far: a timeout shows it.
      const got = () => (predicate(receiver.spans) ? true : `got ${receiver.spans.map((s) => s.name).join(', ') || 'none'}; errors: ${receiver.errors.join('; ') || 'none'}`);
      await expect.poll(got, { interval: 20, message: 'waiting for spans', ...(timeoutMs === undefined ? {} : { timeout: timeoutMs }) }).toBe(true);
      return receiver.spans;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
