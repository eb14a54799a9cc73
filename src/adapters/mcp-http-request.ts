/**
 * One HTTP exchange of the gateway's HTTP upstream (mcp-http-upstream.ts) on `node:http`
 * with keep-alive agents: no fetch, no web streams and no AbortSignal, so a request costs
 * no listener on anything that outlives it. Every request in flight is in `inFlight` until
 * its socket is done with it, for the transport to destroy on close.
 *
 * Redirects are followed as the MCP SDK's transport follows them: within the URL's origin
 * (or to its https form), at most 5, and for a POST only 307 and 308 (which keep the body).
 */
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

const MAX_REDIRECTS = 5;
/** Tries of a request on reused sockets found closed, before its error is told. */
const MAX_STALE_SOCKETS = 16;

export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The message without the server's text (its body or reason phrase), which can quote what a tool read: what a report shows. */
    readonly summary: string = message,
  ) {
    super(message);
    this.name = 'HttpStatusError';
  }
}

/** An error as the operator's report shows it: an HTTP server's text left out. */
export function reportedError(error: unknown): string {
  return error instanceof HttpStatusError ? error.summary : error instanceof Error ? error.message : String(error);
}

export interface Exchange {
  method: 'GET' | 'POST' | 'DELETE';
  headers: OutgoingHttpHeaders;
  body?: string | undefined;
  /** Rejects unless the response's headers arrive within this many ms (the request is destroyed); 0: no limit. */
  headersTimeoutMs?: number | undefined;
  /** Told of each request made (a redirect makes another), so that it can be destroyed. */
  onRequest?: ((request: ClientRequest) => void) | undefined;
}

/** Keep-alive agents for http and https, and the requests in flight on them. */
export class Connections {
  readonly inFlight = new Set<ClientRequest>();
  #http: HttpAgent | undefined;
  #https: HttpsAgent | undefined;
  #closed = false;

  /** The response (any status but a followed redirect) to `exchange` sent to `url`. */
  async send(url: URL, exchange: Exchange): Promise<IncomingMessage> {
    let target = url;
    for (let followed = 0; ; followed++) {
      const response = await this.#onLiveSocket(target, exchange);
      const next = followed < MAX_REDIRECTS ? redirectWithinOrigin(target, exchange.method, response) : undefined;
      if (!next) return response;
      response.resume();
      target = next;
    }
  }

  /** Destroys every request in flight and the idle sockets; nothing is sent after. */
  close(): void {
    this.#closed = true;
    for (const request of this.inFlight) request.destroy(new Error('the connection to the MCP server was closed'));
    this.inFlight.clear();
    this.#http?.destroy();
    this.#https?.destroy();
  }

  /**
   * Sends again a request whose reused keep-alive socket the server had closed while it
   * was idle: the request never reached the server (Node's http docs). Each try drops one
   * dead socket of the pool; one on a new connection is not tried again.
   */
  async #onLiveSocket(url: URL, exchange: Exchange): Promise<IncomingMessage> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.#once(url, exchange);
      } catch (error) {
        const stale = (error as { reusedSocket?: boolean }).reusedSocket === true && (error as NodeJS.ErrnoException).code === 'ECONNRESET';
        if (!stale || tries === MAX_STALE_SOCKETS) throw error;
      }
    }
  }

  #once(url: URL, exchange: Exchange): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      if (this.#closed) {
        reject(new Error('Not connected'));
        return;
      }
      const https = url.protocol === 'https:';
      const agent = https ? (this.#https ??= new HttpsAgent({ keepAlive: true })) : (this.#http ??= new HttpAgent({ keepAlive: true }));
      const headers = exchange.body === undefined ? exchange.headers : { ...exchange.headers, 'content-length': Buffer.byteLength(exchange.body) };
      const request = (https ? httpsRequest : httpRequest)(url, { method: exchange.method, headers, agent });
      this.inFlight.add(request);
      exchange.onRequest?.(request);
      let timer: NodeJS.Timeout | undefined;
      if (exchange.headersTimeoutMs) {
        const ms = exchange.headersTimeoutMs;
        timer = setTimeout(() => request.destroy(new Error(`the MCP server did not answer the ${exchange.method} within ${ms / 1000}s`)), ms);
        timer.unref();
      }
      request.once('response', (response) => {
        clearTimeout(timer);
        resolve(response);
      });
      request.once('error', (error) => {
        clearTimeout(timer);
        reject(Object.assign(error, { reusedSocket: request.reusedSocket }));
      });
      request.once('close', () => {
        clearTimeout(timer);
        this.inFlight.delete(request);
      });
      request.end(exchange.body);
    });
  }
}

/** The body of a response, or null when it is larger than `max` bytes (the response is then destroyed). */
export function readBody(response: IncomingMessage, max: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const declared = Number(response.headers['content-length']);
    if (declared > max) {
      response.destroy();
      resolve(null);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    response.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        response.destroy();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    response.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    response.once('error', reject);
    response.once('close', () => {
      if (!response.complete) reject(new Error('the MCP server closed the connection before the end of its answer'));
    });
  });
}

/** The start of a response's body as text, for an error message. */
export async function bodyText(response: IncomingMessage): Promise<string> {
  const body = await readBody(response, 4096).catch(() => null);
  return body === null ? '' : body.toString('utf8');
}

const REDIRECTS: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

function redirectWithinOrigin(from: URL, method: string, response: IncomingMessage): URL | undefined {
  const status = response.statusCode ?? 0;
  const location = response.headers.location;
  // 301, 302 and 303 turn a request with a body into a GET.
  if (!REDIRECTS.has(status) || location === undefined || (method !== 'GET' && status !== 307 && status !== 308)) return undefined;
  let target: URL;
  try {
    target = new URL(location, from);
  } catch {
    return undefined;
  }
  const addsUserinfo = (target.username !== '' || target.password !== '') && (target.username !== from.username || target.password !== from.password);
  return !addsUserinfo && isWithinOrigin(from, target) ? target : undefined;
}

/** Whether `to` has the scheme, host and port of `from`, or is its https form with both on default ports. */
function isWithinOrigin(from: URL, to: URL): boolean {
  if (from.protocol === to.protocol && from.hostname === to.hostname && from.port === to.port) return true;
  return from.hostname === to.hostname && from.protocol === 'http:' && from.port === '' && to.protocol === 'https:' && to.port === '';
}

/** Why a redirect response was not followed, naming its target without userinfo, query or fragment. */
export function unfollowedRedirect(from: URL, response: IncomingMessage): string | undefined {
  const location = response.headers.location;
  if (!REDIRECTS.has(response.statusCode ?? 0) || location === undefined) return undefined;
  try {
    const target = new URL(location, from);
    target.username = target.password = target.search = target.hash = '';
    return `Redirect to ${target.href} not followed`;
  } catch {
    return undefined;
  }
}
