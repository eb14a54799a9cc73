/**
 * The HTTP rules of MCP's streamable HTTP transport (spec revision 2025-11-25, "Transports"),
 * for the gateway's HTTP face (mcp-http.ts, mcp-http-session.ts): what a request must
 * accept and send, how its body is read, and how refusals and SSE events are written.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { parseMessage } from './mcp-message.js';

/** JSON-RPC error codes of refusals at the HTTP level. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
/** What the MCP SDK's transports answer HTTP-level refusals with. */
export const REFUSED = -32000;

/** The protocol version a server assumes of a client that sends no MCP-Protocol-Version and negotiated none (the spec). */
export const ASSUMED_PROTOCOL_VERSION = '2025-03-26';
/** The first revision without JSON-RPC batches. */
const NO_BATCHES_SINCE = '2025-06-18';
/** The most messages one batch may hold (as the MCP SDK's server transport). */
export const MAX_BATCH = 100;

/** A JSON-RPC error body with no id, as the spec allows for HTTP-level refusals. */
export function problem(res: ServerResponse, status: number, message: string, code = REFUSED, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

interface MediaRange {
  type: string;
  q: number;
  index: number;
}

/** An Accept header's media ranges, lower-cased, with their q-values (RFC 9110 12.5.1). */
function mediaRanges(header: string | undefined): MediaRange[] {
  if (header === undefined) return [];
  return header.split(',').map((part, index) => {
    const [type = '', ...params] = part.split(';').map((p) => p.trim());
    const qParam = params.find((p) => /^q\s*=/i.test(p));
    const q = qParam === undefined ? 1 : Number(qParam.replace(/^q\s*=\s*/i, ''));
    return { type: type.toLowerCase(), q: Number.isFinite(q) ? q : 0, index };
  });
}

/** The client lists `type` itself (the spec asks for it by name), with a q-value above 0. */
export function lists(header: string | undefined, type: string): boolean {
  return mediaRanges(header).some((range) => range.type === type && range.q > 0);
}

/**
 * Whether the client prefers an SSE stream to a JSON answer: a higher q-value, or the same
 * one and listed first (how Node's `negotiator` breaks ties). The MCP SDK's client sends
 * `application/json, text/event-stream`, so it gets JSON unless the server sends something
 * before the answer.
 */
export function prefersEventStream(header: string | undefined): boolean {
  const ranges = mediaRanges(header);
  const sse = ranges.find((r) => r.type === 'text/event-stream');
  const json = ranges.find((r) => r.type === 'application/json');
  if (!sse || !json) return sse !== undefined;
  return sse.q > json.q || (sse.q === json.q && sse.index < json.index);
}

/** `application/json`, parameters (a charset) allowed. */
export function isJsonContentType(header: string | undefined): boolean {
  return (header ?? '').split(';')[0]!.trim().toLowerCase() === 'application/json';
}

/**
 * A refusal of the MCP-Protocol-Version header, or null. The spec: a version the server does
 * not support is answered 400; with no header the version negotiated at initialize holds.
 * `negotiated` (the upstream's answer to initialize) is accepted even when the MCP SDK does not list it.
 */
export function protocolVersionRefusal(header: string | string[] | undefined, negotiated: string | undefined): string | null {
  if (header === undefined) return null;
  if (typeof header === 'string' && (header === negotiated || SUPPORTED_PROTOCOL_VERSIONS.includes(header))) return null;
  return `unsupported MCP-Protocol-Version ${JSON.stringify(header)}: this session speaks ${negotiated ?? 'one of ' + SUPPORTED_PROTOCOL_VERSIONS.join(', ')}`;
}

export type Body = { ok: true; text: string } | { ok: false; status: number; message: string };

/**
 * The request's body as text, refused (413) past `max` bytes: by its Content-Length before
 * reading, or as it arrives (the connection is then destroyed, the rest unread). Read with
 * listeners rather than `for await`: the stream's async iterator costs promises and
 * end-of-stream bookkeeping on every POST.
 * A further 0.97 of the gateway's CPU per tools/call after isInitialize's (mcp-http.ts), in the same rounds.
 */
export function readBody(req: IncomingMessage, max: number, what: string): Promise<Body> {
  const tooLarge = { ok: false as const, status: 413, message: `${what} larger than ${max} bytes is not read` };
  if (Number(req.headers['content-length']) > max) return Promise.resolve(tooLarge);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= max) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.destroy();
      resolve(tooLarge);
    };
    req.on('data', onData);
    req.once('end', () => resolve({ ok: true, text: chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8') }));
    // Kept for the request's life: a late error must not go unhandled. Settling twice is a no-op.
    req.on('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(new Error('the client closed the connection before the end of its request'));
    });
  });
}

export type Parsed =
  | { ok: true; messages: JSONRPCMessage[]; batch: boolean }
  | { ok: false; code: number; message: string };

/**
 * A POST body as JSON-RPC messages: one message, or (protocol versions before 2025-06-18,
 * which had them) a batch of up to MAX_BATCH. Each is validated as the MCP SDK's schema does.
 */
export function parseBody(text: string, protocolVersion: string): Parsed {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, code: PARSE_ERROR, message: 'Parse error: the body is not JSON' };
  }
  const batch = Array.isArray(json);
  const items: unknown[] = batch ? (json as unknown[]) : [json];
  if (batch) {
    if (protocolVersion >= NO_BATCHES_SINCE) {
      return { ok: false, code: INVALID_REQUEST, message: `JSON-RPC batches are not part of MCP ${protocolVersion} (none since ${NO_BATCHES_SINCE}): send one message per POST` };
    }
    if (items.length === 0 || items.length > MAX_BATCH) return { ok: false, code: INVALID_REQUEST, message: `a batch holds 1 to ${MAX_BATCH} messages, not ${items.length}` };
  }
  const messages: JSONRPCMessage[] = [];
  for (const [i, item] of items.entries()) {
    const parsed = parseMessage(item);
    if (!parsed.success) return { ok: false, code: INVALID_REQUEST, message: `${batch ? `message ${i} of the batch` : 'the body'} is not a JSON-RPC message` };
    messages.push(parsed.data);
  }
  return { ok: true, messages, batch };
}

/** Headers of an SSE stream (no-transform and X-Accel-Buffering: proxies must not buffer it). */
export function sseHeaders(sessionId: string): Record<string, string> {
  return { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no', 'mcp-session-id': sessionId };
}

/** How often an idle SSE stream gets a comment line, so intermediaries do not time it out (the MCP SDK's interval). */
const KEEP_ALIVE_MS = 15_000;

/**
 * Writes a comment to the stream every KEEP_ALIVE_MS until it ends; the timer never holds the process.
 * A response ended is closed only once its client has read what was buffered for it, which
 * one that stopped reading never does: written again, it would throw out of the process
 * (ERR_STREAM_WRITE_AFTER_END, an 'error' event nothing listens to) and end every session.
 */
export function keepAlive(res: ServerResponse): void {
  const timer = setInterval(() => {
    if (res.writableEnded || res.destroyed) clearInterval(timer);
    else res.write(': keepalive\n\n');
  }, KEEP_ALIVE_MS);
  timer.unref();
  res.once('close', () => clearInterval(timer));
}

/**
 * The bytes of the socket's write under way that libuv has not handed to the system yet
 * (the handle's writeQueueSize: it falls as the client reads, where writableLength keeps a
 * write's whole length until it completes); 0 on a socket whose handle does not say.
 */
function unsentOfWriteUnderWay(socket: Socket): number {
  const queued = (socket as Socket & { _handle?: { writeQueueSize?: unknown } | null })._handle?.writeQueueSize;
  return typeof queued === 'number' ? queued : 0;
}

/**
 * Calls `cut` once the client of `res` has taken none of the bytes waiting for it for
 * `timeoutMs` (nginx's send_timeout): bytes wait in Node until the socket's writes
 * complete, which is what the client reads. Node's own socket timeout is no measure of it:
 * any byte the client sends restarts it, so a client that read nothing of a 10 MB answer
 * and sent a line break every few seconds held it in the gateway for as long as it liked.
 * A write completes only whole, so the part of it the system still holds counts too: a
 * client reading a 10 MB answer written at once at 3 MB/s takes bytes all along.
 * Checked four times a timeout; the timer never holds the process and stops with `res`.
 */
export function cutWhenStalled(res: ServerResponse, timeoutMs: number, cut: () => void): void {
  let taken = -1;
  let stalledSince = Date.now();
  let timer: NodeJS.Timeout;
  const check = (): void => {
    const socket = res.socket;
    if (res.destroyed || socket === null || socket.destroyed) return;
    // Bytes handed to the socket less those it has not written yet (bytesWritten counts the waiting too; a write under way
    // counts whole until it completes, so its unsent rest is taken off too): only whether this moves matters.
    const now = socket.bytesWritten - socket.writableLength - unsentOfWriteUnderWay(socket);
    if (now !== taken || socket.writableLength === 0) {
      taken = now;
      stalledSince = Date.now();
    } else if (Date.now() - stalledSince >= timeoutMs) {
      cut();
      return;
    }
    timer = setTimeout(check, Math.max(1, Math.floor(timeoutMs / 4)));
    timer.unref();
  };
  check();
  res.once('close', () => clearTimeout(timer));
}
