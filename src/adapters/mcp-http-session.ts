/**
 * One client session of the gateway's HTTP face, as the MCP SDK's `Transport` the relay
 * talks to (mcp-relay.ts): the client's POSTs become messages, and the relay's messages to
 * the client go out on the HTTP responses of streamable HTTP (spec revision 2025-11-25).
 *
 * - A POST holding requests is an exchange: its HTTP response carries their answers. It is
 *   answered as one JSON body (an array for a batch) unless the client prefers an SSE stream
 *   (mcp-http-wire.ts) or the server sends a message related to it before the answer (a
 *   progress notification with the request's progress token): then it becomes an SSE stream,
 *   ended after the last answer. A POST of notifications or answers is answered 202.
 * - GET opens the session's standalone SSE stream: the server's requests and notifications
 *   that relate to no request go there. With none open they go on the newest exchange still
 *   waiting whose client is connected (turned into an SSE stream), and with neither they
 *   are held for the GET stream (mcp-http-events.ts bounds them): the relay cannot tell
 *   which request an upstream's notification or sampling request belongs to, and the spec
 *   allows both streams for it.
 * - Every stream is resumable (mcp-http-events.ts): each event has an id, and a POST's
 *   stream starts with a priming event (an id, no data) for clients at 2025-11-25 or later
 *   (earlier SDK clients fail on an event without data, so the MCP SDK's server sends none
 *   to them either). A GET with `Last-Event-ID` replays the events after it on its stream,
 *   then carries that stream's live messages (a POST's: the rest, up to its answers, then it
 *   ends); it replaces a connection of that stream still open. A client whose SSE
 *   connection drops is not cancelling (the spec): its requests run on and their answers
 *   are held. A JSON answer has no id: a client that drops before it loses it.
 *
 * Written on node:http for the gateway's latency: the SDK's server transport adapts every
 * request to web streams (@hono/node-server) and builds a request listener per request.
 * 0.81 of the gateway process's CPU time per tools/call against the SDK's (6 alternating rounds of 3,000 calls, HTTP upstream, 20 sdk controls).
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { kindOf } from './mcp-message.js';
import { SessionEvents, type EventStream, type HeldBounds, type HeldBudget } from './mcp-http-events.js';
import { INVALID_REQUEST, cutWhenStalled, keepAlive, problem, sseHeaders } from './mcp-http-wire.js';

/** The first protocol revision whose clients take an SSE event without data (the priming event). */
const PRIMING_SINCE = '2025-11-25';
/**
 * Bytes written to an SSE connection and not yet taken by its client past which it counts
 * as away: its connection is ended and its events are held (bounded) for a resume, so a
 * client that never reads costs at most this and one message, not every message sent to it.
 */
export const MAX_UNREAD_BYTES = 1024 * 1024;
/**
 * How long a client may read nothing of what was written to it before its connection is
 * closed (nginx's send_timeout). Node holds what a socket has not taken until its client
 * reads or goes, with no end: a client that asks for large answers and never reads them
 * (20 calls of 10 MB held 400 MB of the gateway's heap) would otherwise grow the gateway
 * without bound. An SSE stream's keep-alive (every 15 s) is progress for a client reading it.
 */
export const SEND_TIMEOUT_MS = 60_000;

/** One POST holding requests, and its HTTP response. */
interface Exchange {
  res: ServerResponse;
  /** Requests whose answers this response still owes. */
  waiting: Set<RequestId>;
  /** Answers kept for a JSON body, in the order the requests came. */
  answers: Map<RequestId, JSONRPCMessage>;
  order: RequestId[];
  batch: boolean;
  /** The SSE stream its answers go on, once it is one (its head is written on `res`). */
  stream: EventStream | undefined;
  /** The stream starts with a priming event (the request's protocol version takes one). */
  primes: boolean;
  /** The progress tokens its requests declared (`_meta.progressToken`). */
  tokens: unknown[];
  done: boolean;
}

export class HttpSessionTransport implements Transport {
  readonly sessionId = randomUUID();
  onmessage?: (message: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** The protocol version the upstream answered initialize with. */
  negotiatedVersion: string | undefined;

  readonly #exchanges = new Map<RequestId, Exchange>();
  readonly #byToken = new Map<unknown, Exchange>();
  readonly #events: SessionEvents;
  #initializeId: RequestId | undefined;
  #closed = false;

  readonly #sendTimeoutMs: number;

  /** `sendTimeoutMs`: SEND_TIMEOUT_MS unless given. */
  constructor(held: Partial<HeldBounds> = {}, budget?: HeldBudget, sendTimeoutMs = SEND_TIMEOUT_MS) {
    this.#sendTimeoutMs = sendTimeoutMs;
    this.#events = new SessionEvents(held, (stream) => {
      const where = stream.number === 0 ? "the client's SSE stream (GET), which it has not opened" : 'a request whose client went away';
      this.onerror?.(new Error(`more messages wait for ${where} than a session holds: the oldest were dropped`));
    }, budget);
  }

  get closed(): boolean {
    return this.#closed;
  }

  async start(): Promise<void> {}

  /**
   * A POST's messages (validated), answered on `res`. A request whose id is still waiting
   * for its answer is refused with the whole POST: its answer could not be told from the other's.
   */
  post(res: ServerResponse, messages: JSONRPCMessage[], batch: boolean, preferStream: boolean, protocolVersion: string | undefined): void {
    const requests = messages.filter((m) => kindOf(m) === 'request') as Array<JSONRPCMessage & { id: RequestId; method: string; params?: { _meta?: { progressToken?: unknown } } }>;
    if (requests.length === 0) {
      res.writeHead(202).end();
      for (const message of messages) this.onmessage?.(message);
      return;
    }
    const seen = new Set<RequestId>();
    for (const { id } of requests) {
      if (this.#exchanges.has(id) || seen.has(id)) {
        return problem(res, 400, `request id ${JSON.stringify(id)} is already waiting for an answer: give each request an id of its own`, INVALID_REQUEST);
      }
      seen.add(id);
    }
    const version = protocolVersion ?? this.negotiatedVersion;
    const primes = version !== undefined && version >= PRIMING_SINCE;
    const exchange: Exchange = { res, waiting: seen, answers: new Map(), order: [...seen], batch, stream: undefined, primes, tokens: [], done: false };
    for (const request of requests) {
      this.#exchanges.set(request.id, exchange);
      if (request.method === 'initialize') this.#initializeId = request.id;
      const token = request.params?._meta?.progressToken;
      if (token !== undefined) {
        exchange.tokens.push(token);
        this.#byToken.set(token, exchange);
      }
    }
    // The client went away (the spec: not a cancellation, so the calls run on): a stream's
    // answers are held for a resume, a JSON answer cannot be delivered.
    res.once('close', () => {
      if (exchange.stream) this.#detach(exchange.stream, res);
      else this.#forget(exchange);
    });
    if (preferStream) this.#openStream(exchange);
    for (const message of messages) this.onmessage?.(message);
  }

  /**
   * A GET: the standalone SSE stream (one at a time: a second is refused with 409, as the
   * SDK does), or with `Last-Event-ID` the resumed stream that event belongs to.
   */
  listen(res: ServerResponse, lastEventId?: string): void {
    // An empty Last-Event-ID is no id (an SSE client sends none before its first event id).
    if (lastEventId !== undefined && lastEventId !== '') {
      const resumed = this.#events.resume(lastEventId);
      if (!resumed.ok) return problem(res, resumed.status, resumed.message);
      return this.#attach(resumed.stream, res, resumed.frames);
    }
    const standalone = this.#events.standalone;
    if (standalone.res) return problem(res, 409, 'this session has an SSE stream open already (GET): one at a time');
    this.#attach(standalone, res, this.#events.undelivered(standalone));
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.#closed) throw new Error('the session is closed');
    const kind = kindOf(message);
    if (kind === 'result' || kind === 'error') return this.#answer(message as JSONRPCMessage & { id: RequestId });
    const related = this.#related(message, options?.relatedRequestId);
    if (related) return this.#write(related, message);
    const standalone = this.#events.standalone;
    const newest = standalone.res ? undefined : this.#newestConnected();
    if (newest) return this.#write(newest, message);
    // On the GET stream, or held for it until the client opens (or resumes) it.
    this.#emit(standalone, JSON.stringify(message));
  }

  /** Ends every stream; requests still waiting are answered with an error first. */
  async close(): Promise<void> {
    if (this.#closed) return;
    for (const exchange of new Set(this.#exchanges.values())) {
      for (const id of exchange.waiting) this.#answer({ jsonrpc: '2.0', id, error: { code: ErrorCode.ConnectionClosed, message: 'the session ended before the MCP server answered' } });
    }
    this.#closed = true;
    const standalone = this.#events.standalone;
    standalone.res?.end();
    standalone.res = null;
    this.#events.clear();
    this.onclose?.();
  }

  #answer(message: JSONRPCMessage & { id: RequestId }): void {
    const exchange = this.#exchanges.get(message.id);
    if (!exchange) throw new Error(`no request ${JSON.stringify(message.id)} is waiting for an answer (its client's connection closed)`);
    this.#exchanges.delete(message.id);
    exchange.waiting.delete(message.id);
    if (message.id === this.#initializeId && 'result' in message) this.#learnVersion(message.result);
    if (exchange.stream) this.#emit(exchange.stream, JSON.stringify(message));
    else exchange.answers.set(message.id, message);
    if (exchange.waiting.size > 0) return;
    this.#finish(exchange);
    if (exchange.stream) return this.#end(exchange.stream);
    const answers = exchange.order.map((id) => exchange.answers.get(id)!);
    const body = JSON.stringify(exchange.batch ? answers : answers[0]);
    this.#cutIfUnread(exchange.res);
    exchange.res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': this.sessionId }).end(body);
  }

  #learnVersion(result: Record<string, unknown>): void {
    if (typeof result.protocolVersion === 'string') this.negotiatedVersion = result.protocolVersion;
  }

  /** The exchange a request or notification of the server belongs to, when that can be told. */
  #related(message: JSONRPCMessage, relatedRequestId: RequestId | undefined): Exchange | undefined {
    if (relatedRequestId !== undefined) return this.#exchanges.get(relatedRequestId);
    if (!('method' in message) || message.method !== 'notifications/progress') return undefined;
    return this.#byToken.get((message.params as { progressToken?: unknown } | undefined)?.progressToken);
  }

  /** The newest exchange still waiting whose client is still connected to it. */
  #newestConnected(): Exchange | undefined {
    let newest: Exchange | undefined;
    for (const exchange of this.#exchanges.values()) if (!exchange.stream || exchange.stream.res) newest = exchange;
    return newest;
  }

  /** A message before the answers: the exchange becomes an SSE stream if it is not one yet. */
  #write(exchange: Exchange, message: JSONRPCMessage): void {
    this.#emit(exchange.stream ?? this.#openStream(exchange), JSON.stringify(message));
  }

  #openStream(exchange: Exchange): EventStream {
    const stream = this.#events.open();
    exchange.stream = stream;
    stream.res = exchange.res;
    this.#cutIfUnread(exchange.res);
    exchange.res.writeHead(200, sseHeaders(this.sessionId));
    if (exchange.primes) exchange.res.write(this.#events.priming(stream));
    exchange.res.flushHeaders();
    keepAlive(exchange.res);
    return stream;
  }

  /** A message as an event of `stream`: held, and written if its client is connected. */
  #emit(stream: EventStream, json: string): void {
    // The client does not read what it was sent: it is away, and its events wait for a resume.
    if (stream.res && stream.res.writableLength > MAX_UNREAD_BYTES) {
      const unread = stream.res;
      stream.res = null;
      unread.end();
      this.onerror?.(new Error(`a client left more than ${MAX_UNREAD_BYTES} bytes of an SSE stream unread: its connection was ended, and the stream is held for a resume (Last-Event-ID)`));
    }
    const frame = this.#events.event(stream, json);
    stream.res?.write(frame);
  }

  /** `res` carries `stream` from now on (replacing a connection of it still open), after `frames`. */
  #attach(stream: EventStream, res: ServerResponse, frames: string[]): void {
    const previous = stream.res;
    stream.res = res;
    previous?.end();
    this.#cutIfUnread(res);
    res.writeHead(200, sseHeaders(this.sessionId));
    res.flushHeaders();
    keepAlive(res);
    res.once('close', () => this.#detach(stream, res));
    for (const frame of frames) res.write(frame);
    if (stream.finished) this.#end(stream);
  }

  /**
   * `res`'s connection is closed once its client has taken nothing of it for the send
   * timeout (a stream's events stay held for a resume): what was buffered for it is let go.
   * Armed only once something is written: the wait for an answer is not the client's to fill.
   */
  #cutIfUnread(res: ServerResponse): void {
    cutWhenStalled(res, this.#sendTimeoutMs, () => {
      res.destroy();
      this.onerror?.(new Error(`a client read nothing of its response for ${this.#sendTimeoutMs} ms: its connection was closed, and what was buffered for it let go`));
    });
  }

  #detach(stream: EventStream, res: ServerResponse): void {
    if (stream.res === res) stream.res = null;
  }

  /** The stream's last event is written: its connection ends. */
  #end(stream: EventStream): void {
    const res = stream.res;
    stream.res = null;
    this.#events.finish(stream);
    res?.end();
  }

  /** The exchange owes nothing more: its ids and tokens are released. */
  #finish(exchange: Exchange): void {
    exchange.done = true;
    for (const token of exchange.tokens) if (this.#byToken.get(token) === exchange) this.#byToken.delete(token);
  }

  #forget(exchange: Exchange): void {
    if (exchange.done) return;
    this.#finish(exchange);
    for (const id of exchange.waiting) if (this.#exchanges.get(id) === exchange) this.#exchanges.delete(id);
  }
}
