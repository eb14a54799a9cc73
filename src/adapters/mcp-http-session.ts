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
 *   waiting (turned into an SSE stream), and with neither they wait for a GET stream (up to
 *   MAX_QUEUED): the relay cannot tell which request an upstream's notification or sampling
 *   request belongs to, and the spec allows both streams for it.
 * - No stream is resumable (no SSE event ids): a `Last-Event-ID` opens a fresh stream. A
 *   client whose connection drops loses the answers of that exchange.
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
import { INVALID_REQUEST, keepAlive, problem, sseEvent, sseHeaders } from './mcp-http-wire.js';

/** Unrelated messages kept for a standalone stream that is not open yet. */
const MAX_QUEUED = 1000;

/** One POST holding requests, and its HTTP response. */
interface Exchange {
  res: ServerResponse;
  /** Requests whose answers this response still owes. */
  waiting: Set<RequestId>;
  /** Answers kept for a JSON body, in the order the requests came. */
  answers: Map<RequestId, JSONRPCMessage>;
  order: RequestId[];
  batch: boolean;
  /** The response is an SSE stream (its head is written). */
  stream: boolean;
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
  #standalone: ServerResponse | null = null;
  #queued: JSONRPCMessage[] = [];
  #initializeId: RequestId | undefined;
  #closed = false;

  get closed(): boolean {
    return this.#closed;
  }

  async start(): Promise<void> {}

  /**
   * A POST's messages (validated), answered on `res`. A request whose id is still waiting
   * for its answer is refused with the whole POST: its answer could not be told from the other's.
   */
  post(res: ServerResponse, messages: JSONRPCMessage[], batch: boolean, preferStream: boolean): void {
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
    const exchange: Exchange = { res, waiting: seen, answers: new Map(), order: [...seen], batch, stream: false, tokens: [], done: false };
    for (const request of requests) {
      this.#exchanges.set(request.id, exchange);
      if (request.method === 'initialize') this.#initializeId = request.id;
      const token = request.params?._meta?.progressToken;
      if (token !== undefined) {
        exchange.tokens.push(token);
        this.#byToken.set(token, exchange);
      }
    }
    // The client went away: its answers cannot be delivered (the spec: not a cancellation, so the calls run on).
    res.once('close', () => this.#forget(exchange));
    if (preferStream) this.#openStream(exchange);
    for (const message of messages) this.onmessage?.(message);
  }

  /** A GET: the standalone SSE stream (one at a time: a second is refused with 409, as the SDK does). */
  listen(res: ServerResponse): void {
    if (this.#standalone) return problem(res, 409, 'this session has an SSE stream open already (GET): one at a time');
    this.#standalone = res;
    res.writeHead(200, sseHeaders(this.sessionId));
    res.flushHeaders();
    keepAlive(res);
    res.once('close', () => {
      if (this.#standalone === res) this.#standalone = null;
    });
    const queued = this.#queued;
    this.#queued = [];
    for (const message of queued) res.write(sseEvent(message));
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if (this.#closed) throw new Error('the session is closed');
    const kind = kindOf(message);
    if (kind === 'result' || kind === 'error') return this.#answer(message as JSONRPCMessage & { id: RequestId });
    const related = this.#related(message, options?.relatedRequestId);
    if (related) return this.#write(related, message);
    if (this.#standalone) return void this.#standalone.write(sseEvent(message));
    const newest = this.#newestWaiting();
    if (newest) return this.#write(newest, message);
    if (this.#queued.length >= MAX_QUEUED) {
      this.#queued.shift();
      this.onerror?.(new Error(`more than ${MAX_QUEUED} messages wait for the client's SSE stream (GET), which it has not opened: the oldest was dropped`));
    }
    this.#queued.push(message);
  }

  /** Ends every stream; requests still waiting are answered with an error first. */
  async close(): Promise<void> {
    if (this.#closed) return;
    for (const exchange of new Set(this.#exchanges.values())) {
      for (const id of exchange.waiting) this.#answer({ jsonrpc: '2.0', id, error: { code: ErrorCode.ConnectionClosed, message: 'the session ended before the MCP server answered' } });
    }
    this.#closed = true;
    this.#standalone?.end();
    this.#standalone = null;
    this.#queued = [];
    this.onclose?.();
  }

  #answer(message: JSONRPCMessage & { id: RequestId }): void {
    const exchange = this.#exchanges.get(message.id);
    if (!exchange) throw new Error(`no request ${JSON.stringify(message.id)} is waiting for an answer (its client's connection closed)`);
    this.#exchanges.delete(message.id);
    exchange.waiting.delete(message.id);
    if (message.id === this.#initializeId && 'result' in message) this.#learnVersion(message.result);
    if (exchange.stream) exchange.res.write(sseEvent(message));
    else exchange.answers.set(message.id, message);
    if (exchange.waiting.size > 0) return;
    this.#finish(exchange);
    if (exchange.stream) return void exchange.res.end();
    const answers = exchange.order.map((id) => exchange.answers.get(id)!);
    const body = JSON.stringify(exchange.batch ? answers : answers[0]);
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

  #newestWaiting(): Exchange | undefined {
    let newest: Exchange | undefined;
    for (const exchange of this.#exchanges.values()) newest = exchange;
    return newest;
  }

  /** A message before the answers: the exchange becomes an SSE stream if it is not one yet. */
  #write(exchange: Exchange, message: JSONRPCMessage): void {
    if (!exchange.stream) this.#openStream(exchange);
    exchange.res.write(sseEvent(message));
  }

  #openStream(exchange: Exchange): void {
    exchange.stream = true;
    exchange.res.writeHead(200, sseHeaders(this.sessionId));
    exchange.res.flushHeaders();
    keepAlive(exchange.res);
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
