/**
 * A real OTLP/HTTP receiver for tests: a node:http server on a free port that takes
 * `POST /v1/traces` with a JSON body (what @opentelemetry/exporter-trace-otlp-http 0.2xx
 * sends; a protobuf body is recorded as an error so a test fails loudly if that changes)
 * and keeps the spans it decoded.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

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

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  headers: IncomingHttpHeaders[];
  errors: string[];
  /** Answers requests this long after they arrive (a slow collector). */
  delayMs: number;
  /** Resolves once `predicate` holds of the spans received (polls; rejects after `timeoutMs`). */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const receiver = { spans: [] as ReceivedSpan[], headers: [] as IncomingHttpHeaders[], errors: [] as string[], delayMs: 0 };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      receiver.headers.push(req.headers);
      const type = req.headers['content-type'] ?? '';
      if (req.url !== '/v1/traces' || !type.includes('json')) {
        receiver.errors.push(`${req.method} ${req.url} ${type}`);
        res.writeHead(415).end();
        return;
      }
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const resource = attributesOf(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              receiver.spans.push({
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
    async waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(receiver.spans)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for spans; got ${receiver.spans.map((s) => s.name).join(', ') || 'none'}; errors: ${receiver.errors.join('; ') || 'none'}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return receiver.spans;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
