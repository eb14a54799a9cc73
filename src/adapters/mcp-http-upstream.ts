/**
 * A streamable-HTTP MCP server behind the gateway: a client transport of our own on
 * `node:http` with keep-alive agents (mcp-http-request.ts) and an incremental SSE reader
 * (mcp-sse.ts), in place of the MCP SDK's (fetch, and SSE parsed through web streams).
 * It speaks as the SDK's does: the session id and protocol version headers, answers as
 * JSON or as an SSE stream, the server's own stream (GET) resumed with Last-Event-ID, a
 * request's stream resumed the same way when it ends before the answer, redirects within
 * the origin, DELETE on close. Beyond it, two guarantees keep the server's own messages
 * from being lost:
 *
 * - Messages reach the server in the order the client sent them. Each is a POST of its
 *   own, so a tools/list sent right after `notifications/initialized` could overtake it
 *   and miss the tools a server registers once initialized. A notification (or an answer)
 *   is accepted (202) before anything sent after it goes out.
 * - The server's own stream (GET) is open before `notifications/initialized` is sent. The
 *   SDK opens it only after, and a server that speaks first once initialized (a
 *   roots/list request, a tools/list_changed notification) writes to no stream: the
 *   message is dropped.
 *
 * And a server's message larger than `maxMessageBytes` is skipped and reported (onoversize),
 * a 404 to a request of the session means the server ended it (the transport closes), a
 * request cancelled by the relay has its POST closed, and close ends every request in flight.
 * 0.36 of the SDK transport's CPU per tools/call in the gateway's process (interleaved rounds, 8 × 1,000 calls each).
 */
import type { ClientRequest, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { bodyText, Connections, HttpStatusError, readBody, unfollowedRedirect } from './mcp-http-request.js';
import { kindOf, parseMessage } from './mcp-message.js';
import { SseReader } from './mcp-sse.js';
import type { LineEvents } from './mcp-stdio.js';

export interface HttpUpstreamOptions {
  /** Sent with every request (an Authorization header, say). */
  headers?: Record<string, string> | undefined;
  /** Largest message read from the server, in bytes. Default 64 MiB. */
  maxMessageBytes?: number | undefined;
  /** A notification or answer must be accepted within this many ms, so that it holds back nothing sent after it for longer. Default 30000. */
  acceptTimeoutMs?: number | undefined;
}

/**
 * How a stream of the server's is resumed: after this, growing by half each time, at most 2
 * tries in a row. A delay the server sets (`retry:`) is kept between minMs and maxMs: a
 * server answering `retry: 0` and closing each stream at once had the gateway reconnect in
 * a tight loop (tries start again once a stream opens), and one past 2^31 ms fired at once.
 */
const RECONNECT = { initialMs: 1000, minMs: 100, maxMs: 30_000, grow: 1.5, maxTries: 2 };
/** DELETE on close waits at most this long. */
const CLOSE_TIMEOUT_MS = 2000;

export class HttpUpstreamTransport implements Transport, LineEvents {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  onoversize?: () => void;
  onbatch?: (items: unknown[]) => void;
  readonly #connections = new Connections();
  readonly #headers: Record<string, string>;
  readonly #max: number;
  readonly #acceptTimeoutMs: number;
  #sessionId: string | undefined;
  #protocolVersion: string | undefined;
  /** Settles when every notification and answer sent so far was accepted. */
  #accepted: Promise<void> = Promise.resolve();
  /** The stream of each request still waiting for its answer, by its id: closed when the request is cancelled. */
  readonly #waiting = new Map<RequestId, Waiting>();
  #retryMs: number | undefined;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #closed = false;
  #ended = false;

  constructor(
    private readonly url: URL,
    options: HttpUpstreamOptions = {},
  ) {
    this.#headers = options.headers ?? {};
    this.#max = options.maxMessageBytes ?? 64 * 1024 * 1024;
    this.#acceptTimeoutMs = options.acceptTimeoutMs ?? 30_000;
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('Not connected'));
    const sent = this.#accepted.then(() => this.#send(message));
    if (kindOf(message) !== 'request') this.#accepted = sent.catch(() => undefined);
    return sent;
  }

  setProtocolVersion(version: string): void {
    this.#protocolVersion = version;
  }

  /** Ends the session on the server (DELETE), then every request in flight. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#reconnectTimer);
    if (this.#sessionId !== undefined) {
      try {
        const response = await this.#connections.send(this.url, { method: 'DELETE', headers: this.#common(), headersTimeoutMs: CLOSE_TIMEOUT_MS });
        response.resume();
      } catch {
        // The server is gone or slow: the session ends with the connection.
      }
    }
    this.#end();
  }

  async #send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new Error('Not connected');
    const method = 'method' in message ? message.method : undefined;
    const request = kindOf(message) === 'request';
    // The server's stream first, so that what it sends once initialized has a stream to go to.
    if (method === 'notifications/initialized' && !request) await this.#openStream(undefined).catch((error: unknown) => this.#error(error));
    const id = request ? (message as { id: RequestId }).id : undefined;
    const waiting: Waiting | undefined = id === undefined ? undefined : { request: undefined, cancelled: false };
    if (id !== undefined) this.#waiting.set(id, waiting!);
    const headers = { ...this.#common(), 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const response = await this.#connections.send(this.url, {
      method: 'POST',
      headers,
      body: JSON.stringify(message),
      // A request's answer takes as long as the tool: its time is the relay's to limit (requestTimeoutMs).
      headersTimeoutMs: request ? 0 : this.#acceptTimeoutMs,
      onRequest: waiting && ((post) => (waiting.request = post)),
    });
    const sessionId = response.headers['mcp-session-id'];
    if (typeof sessionId === 'string' && sessionId !== '') this.#sessionId = sessionId;
    const status = response.statusCode ?? 0;
    if (status < 200 || status > 299) {
      if (id !== undefined) this.#waiting.delete(id);
      throw await this.#statusError(response, 'POSTing to endpoint', true);
    }
    if (method === 'notifications/cancelled') this.#cancelled(message);
    if (id === undefined || status === 202) {
      if (id !== undefined) this.#waiting.delete(id);
      response.resume();
      return;
    }
    const type = mediaType(response.headers['content-type']);
    if (type === 'text/event-stream') {
      this.#readStream(response, { get: false, id, waiting });
      return;
    }
    this.#waiting.delete(id);
    if (type !== 'application/json') {
      response.resume();
      // The header is not quoted: the server writes it as it likes, and could write there what a tool read.
      throw new Error('Streamable HTTP error: the answer is neither application/json nor text/event-stream (unexpected content type)');
    }
    const body = await readBody(response, this.#max);
    if (body === null) this.onoversize?.();
    else this.#deliver(body.toString('utf8'));
  }

  /**
   * Opens the server's own stream (GET), or resumes a stream after its last event. A
   * server without one answers 405. Settles once the response's headers arrived.
   */
  async #openStream(lastEventId: string | undefined, id?: RequestId): Promise<void> {
    const headers: OutgoingHttpHeaders = { ...this.#common(), accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const waiting = id === undefined ? undefined : this.#waiting.get(id);
    if (waiting?.cancelled) return;
    const response = await this.#connections.send(this.url, {
      method: 'GET',
      headers,
      headersTimeoutMs: this.#acceptTimeoutMs,
      onRequest: waiting && ((get) => (waiting.request = get)),
    });
    const status = response.statusCode ?? 0;
    if (status === 405) {
      response.resume();
      return;
    }
    // The body is not told: on the server's own stream it could read as a parse error (mcp.ts) and fail every pending request.
    if (status < 200 || status > 299) throw await this.#statusError(response, 'opening the SSE stream', false);
    this.#readStream(response, { get: id === undefined, id, waiting, lastEventId });
  }

  /**
   * Reads the server's messages from an SSE stream. A stream that ends (or breaks) before
   * it is done is resumed after its last event: the server's own stream always, a
   * request's stream when it had an event id and the answer has not come.
   */
  #readStream(response: IncomingMessage, stream: { get: boolean; id: RequestId | undefined; waiting: Waiting | undefined; lastEventId?: string | undefined }): void {
    let lastEventId = stream.lastEventId;
    let answered = false;
    const reader = new SseReader(this.#max, {
      onEvent: (event) => {
        if (event.id !== undefined) lastEventId = event.id;
        if (event.data !== '' && event.event === 'message' && this.#deliver(event.data, stream.id)) answered = true;
      },
      onRetry: (ms) => (this.#retryMs = ms),
      onOversize: () => this.onoversize?.(),
    });
    response.on('data', (chunk: Buffer) => reader.push(chunk));
    response.once('close', () => {
      if (this.#closed || stream.waiting?.cancelled) return;
      if (!response.complete) this.onerror?.(new Error('SSE stream disconnected'));
      const resumable = stream.get || lastEventId !== undefined;
      if (!resumable || answered) {
        if (stream.id !== undefined) this.#waiting.delete(stream.id);
        return;
      }
      // Tries start again once a stream opened; only streams that fail to open in a row count.
      this.#reconnect(lastEventId, 0, stream.get ? undefined : stream.id);
    });
  }

  #reconnect(lastEventId: string | undefined, tries: number, id: RequestId | undefined): void {
    if (id !== undefined && this.#waiting.get(id)?.cancelled !== false) return;
    if (tries >= RECONNECT.maxTries) {
      this.onerror?.(new Error(`Maximum reconnection attempts (${RECONNECT.maxTries}) exceeded.`));
      return;
    }
    const delay = Math.max(RECONNECT.minMs, Math.min(this.#retryMs ?? RECONNECT.initialMs * RECONNECT.grow ** tries, RECONNECT.maxMs));
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      if (this.#closed) return;
      this.#openStream(lastEventId, id).catch((error: unknown) => {
        if (this.#closed) return;
        // An HTTP error stays one, so that a report shows its summary and never the server's text (its reason phrase).
        const failed = 'Failed to reconnect SSE stream: ';
        this.onerror?.(error instanceof HttpStatusError ? new HttpStatusError(error.status, failed + error.message, failed + error.summary) : new Error(failed + (error instanceof Error ? error.message : String(error))));
        this.#reconnect(lastEventId, tries + 1, id);
      });
    }, delay);
    this.#reconnectTimer.unref();
  }

  /** Parses and passes on the server's message(s); true when one is the answer to request `answering`. */
  #deliver(text: string, answering?: RequestId): boolean {
    let json: unknown;
    try {
      json = JSON.parse(text) as unknown;
    } catch (error) {
      this.onerror?.(error as Error);
      return false;
    }
    let answered = false;
    // Answers as an array (a JSON-RPC batch) are passed on one by one, as the SDK's transport did.
    for (const item of Array.isArray(json) ? (json as unknown[]) : [json]) {
      const parsed = parseMessage(item);
      if (!parsed.success) {
        this.onerror?.(parsed.error);
        return answered;
      }
      const kind = kindOf(parsed.data);
      if ((kind === 'result' || kind === 'error') && (parsed.data as { id: RequestId }).id === answering) answered = true;
      this.onmessage?.(parsed.data);
    }
    return answered;
  }

  /** The relay cancelled a request (timed out, or the client cancelled it): its answer is not wanted, and its POST holds a socket. */
  #cancelled(message: JSONRPCMessage): void {
    const id = (message as { params?: { requestId?: unknown } }).params?.requestId;
    if (typeof id !== 'string' && typeof id !== 'number') return;
    const waiting = this.#waiting.get(id);
    if (!waiting) return;
    this.#waiting.delete(id);
    waiting.cancelled = true;
    waiting.request?.destroy();
  }

  async #statusError(response: IncomingMessage, what: string, withBody: boolean): Promise<Error> {
    const status = response.statusCode ?? 0;
    if (!withBody) response.resume();
    const text = unfollowedRedirect(this.url, response) ?? (withBody ? await bodyText(response) : (response.statusMessage ?? ''));
    if (status === 404 && this.#sessionId !== undefined) {
      // MCP: the server ended the session; every later request would get the same.
      queueMicrotask(() => this.#end());
      return new HttpStatusError(status, `Streamable HTTP error: the MCP server ended the session (HTTP 404 ${what}): ${text}`, `Streamable HTTP error: the MCP server ended the session (HTTP 404 ${what})`);
    }
    return new HttpStatusError(status, `Streamable HTTP error: Error ${what}: HTTP ${status} ${text}`, `Streamable HTTP error: Error ${what}: HTTP ${status}`);
  }

  #common(): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.#sessionId !== undefined) headers['mcp-session-id'] = this.#sessionId;
    if (this.#protocolVersion !== undefined) headers['mcp-protocol-version'] = this.#protocolVersion;
    return { ...headers, ...this.#headers };
  }

  #error(error: unknown): void {
    this.onerror?.(error instanceof Error ? error : new Error(String(error)));
  }

  /** Every request in flight ends; the relay is told once. */
  #end(): void {
    if (this.#ended) return;
    this.#ended = this.#closed = true;
    clearTimeout(this.#reconnectTimer);
    this.#waiting.clear();
    this.#connections.close();
    this.onclose?.();
  }
}

/** A request's stream (its POST, or the GET resuming it): destroyed, and not resumed, once the request is cancelled. */
interface Waiting {
  request: ClientRequest | undefined;
  cancelled: boolean;
}

function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}
