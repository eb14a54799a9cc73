/**
 * The MCP gateway's HTTP face (`guardctl mcp-proxy --listen HOST:PORT`): MCP over
 * streamable HTTP at `/mcp` (spec revision 2025-11-25: POST, GET and DELETE, JSON answers
 * and SSE streams, `Mcp-Session-Id`; mcp-http-session.ts) for many clients at once, each
 * guarded as over stdio.
 *
 * Each client session gets an upstream of its own: a process started for it (stdio) or a
 * session of its own on the HTTP server. A stdio MCP server serves one client: its roots,
 * subscriptions, log level and the requests it sends to "the client" belong to one
 * session, and a shared process would mix them (and let one session read another's
 * answers). The price is a process per session, which the session bound caps.
 *
 * Before MCP sees a request: the path is /mcp; the Host is one this gateway answers to
 * and the Origin, when a browser sends one, is listed (DNS rebinding, 403); the client
 * holds a credential (401). Then, as the spec asks: a session id on every request but
 * initialize (400 without, 404 unknown), a supported MCP-Protocol-Version (400), an Accept
 * listing what the method answers with (406) and a JSON body (415) of at most
 * MAX_POST_BYTES (413) that parses (400, a JSON-RPC parse error). A GET's Last-Event-ID
 * resumes a stream of its own session only (mcp-http-events.ts: 400 for any other id, 410
 * past what the session holds).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isInitializeRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { GuardAgent } from '../sdk/agent.js';
import type { AdapterOptions } from './decisions.js';
import { HeldBudget, MAX_HELD_TOTAL_BYTES, type HeldBounds } from './mcp-http-events.js';
import { HttpSessionTransport } from './mcp-http-session.js';
import {
  ASSUMED_PROTOCOL_VERSION, INVALID_REQUEST, isJsonContentType, lists, parseBody, prefersEventStream, problem, protocolVersionRefusal, readBody, REFUSED,
} from './mcp-http-wire.js';
import { isLoopback } from './mcp-loopback.js';
import { startMcpProxy, type McpProxy, type McpProxyOptions, type McpUpstream } from './mcp.js';

/** How clients prove who they are. */
export type McpHttpAuth =
  /** A bearer token (GUARD_MCP_TOKEN), compared in constant time. */
  | { token: string }
  /** A key the guard server accepts (sent as a bearer token or X-API-Key), checked there. */
  | { verifyKey: (key: string) => Promise<boolean> }
  /** No credential: allowed on loopback addresses only (the CLI refuses otherwise). */
  | { none: true };

export interface McpHttpGatewayOptions extends AdapterOptions {
  guard: GuardAgent;
  upstream: McpUpstream;
  host: string;
  /** 0: a free port. */
  port: number;
  auth: McpHttpAuth;
  /** Origins (scheme://host:port) a browser may call from; any other Origin is refused. */
  allowedOrigins?: readonly string[];
  /** Sessions kept at once; past it the one idle longest of the credential holding the most is closed. Default 1000. */
  maxSessions?: number;
  serverName?: string;
  requestTimeoutMs?: number;
  maxMessageBytes?: number;
  /** Each session's requests in flight at once (McpProxyOptions.maxPending). */
  maxPending?: number;
  /** The key a person's answer to an approval question is recorded with (McpProxyOptions.approverApiKey). */
  approverApiKey?: string;
  /** Events held for clients resuming a stream (mcp-http-events.ts; defaults 1,000 events and 1 MiB a session, 64 MiB over all sessions). */
  held?: Partial<HeldBounds>;
  /** How long a client may read nothing of a response before its connection is closed (mcp-http-session.ts SEND_TIMEOUT_MS, 60 s). */
  sendTimeoutMs?: number;
  /** One pinned document's rules for every session (mcp-pins.ts). */
  pins?: McpProxyOptions['pins'];
  report?: (line: string) => void;
}

export interface McpHttpGateway {
  /** The MCP endpoint, `http://host:port/mcp`. */
  readonly url: string;
  readonly sessionCount: number;
  close(): Promise<void>;
}

interface Session {
  transport: HttpSessionTransport;
  proxy: McpProxy;
  lastActive: number;
  /** Who opened it (holderOf): a session answers only to the credential that opened it. */
  holder: string;
}

const DEFAULT_MAX_SESSIONS = 1000;
/** An initialize request is small; a session-less POST is read only up to this. */
const MAX_INITIALIZE_BYTES = 1024 * 1024;
/** The most a POST of a session is read (the MCP SDK's server transport's bound, which this face had before). */
const MAX_POST_BYTES = 4 * 1024 * 1024;

export async function startMcpHttpGateway(options: McpHttpGatewayOptions): Promise<McpHttpGateway> {
  const report = options.report ?? ((line: string) => void process.stderr.write(`[guardctl mcp-proxy] ${line}\n`));
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const sessions = new Map<string, Session>();
  const allowedOrigins = new Set((options.allowedOrigins ?? []).map((o) => o.toLowerCase()));
  const heldBudget = new HeldBudget(options.held?.maxTotalBytes ?? MAX_HELD_TOTAL_BYTES);
  let closing = false;

  const endSession = async (id: string, why: string): Promise<void> => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    report(`session ${id} ended: ${why}`);
    await session.proxy.close();
  };

  /**
   * Makes room for one more session of `holder`. The session that goes is the one idle
   * longest among those of the credential holding the most (the newcomer counted): a client
   * that opens sessions in a loop closes its own, never everyone else's. With one shared
   * token every session has the same holder, and it is simply the one idle longest.
   */
  const makeRoom = async (holder: string): Promise<void> => {
    while (sessions.size >= maxSessions) {
      const held = new Map<string, number>([[holder, 1]]);
      for (const s of sessions.values()) held.set(s.holder, (held.get(s.holder) ?? 0) + 1);
      const most = Math.max(...held.values());
      let oldest: [string, Session] | undefined;
      for (const entry of sessions) {
        if (held.get(entry[1].holder) === most && (!oldest || entry[1].lastActive < oldest[1].lastActive)) oldest = entry;
      }
      if (!oldest) return;
      await endSession(oldest[0], `${maxSessions} sessions are open, and it was idle the longest of the credential holding the most`);
    }
  };

  /** An initialize request without a session: a session and its upstream are started, then it is relayed. */
  const newSession = async (req: IncomingMessage, res: ServerResponse, holder: string): Promise<void> => {
    const body = await readBody(req, MAX_INITIALIZE_BYTES, 'an initialize request');
    if (!body.ok) return problem(res, body.status, body.message);
    const parsed = parseBody(body.text, ASSUMED_PROTOCOL_VERSION);
    if (!parsed.ok) return problem(res, 400, parsed.message, parsed.code);
    if (parsed.batch || !isInitialize(parsed.messages[0]!)) {
      return problem(res, 400, 'no Mcp-Session-Id: start a session with an initialize request (on its own, not in a batch)');
    }
    const refused = acceptRefusal(req, 'POST');
    if (refused) return problem(res, refused.status, refused.message);
    await makeRoom(holder);
    const transport = new HttpSessionTransport(options.held, heldBudget, options.sendTimeoutMs);
    const id = transport.sessionId;
    let proxy: McpProxy;
    try {
      proxy = await startMcpProxy({
        guard: options.guard,
        upstream: options.upstream,
        client: transport,
        pins: options.pins,
        ...(options.serverName !== undefined && { serverName: options.serverName }),
        ...(options.requestTimeoutMs !== undefined && { requestTimeoutMs: options.requestTimeoutMs }),
        ...(options.maxMessageBytes !== undefined && { maxMessageBytes: options.maxMessageBytes }),
        ...(options.maxPending !== undefined && { maxPending: options.maxPending }),
        ...(options.approverApiKey !== undefined && { approverApiKey: options.approverApiKey }),
        onDecision: options.onDecision,
        // The MCP session id: the session the checks belong to.
        sessionId: () => id,
        report: (line) => report(`session ${id}: ${line}`),
      });
    } catch (error) {
      report(`could not start the MCP server for a new session: ${error instanceof Error ? error.message : String(error)}`);
      return problem(res, 502, 'the gateway could not reach its MCP server');
    }
    if (closing) {
      await proxy.close();
      return problem(res, 503, 'the gateway is stopping');
    }
    const opened: Session = { transport, proxy, lastActive: Date.now(), holder };
    sessions.set(id, opened);
    // The upstream went away (or the session was ended): the session ends with it.
    void proxy.done.then((exit) => {
      if (sessions.get(id) === opened) void endSession(id, exit.reason);
    });
    const requested = (parsed.messages[0] as { params?: { protocolVersion?: unknown } }).params?.protocolVersion;
    transport.post(res, parsed.messages, false, prefersEventStream(req.headers.accept), typeof requested === 'string' ? requested : undefined);
  };

  /** A POST to a session: its messages are relayed, the answers come on the response. */
  const postTo = async (session: Session, req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = await readBody(req, MAX_POST_BYTES, 'a message');
    if (!body.ok) return problem(res, body.status, body.message);
    const version = session.transport.negotiatedVersion ?? headerOf(req, 'mcp-protocol-version') ?? ASSUMED_PROTOCOL_VERSION;
    const parsed = parseBody(body.text, version);
    if (!parsed.ok) return problem(res, 400, parsed.message, parsed.code);
    if (parsed.messages.some(isInitialize)) return problem(res, 400, 'this session is initialized already: initialize a new one without an Mcp-Session-Id', INVALID_REQUEST);
    if (session.transport.closed) return problem(res, 404, 'no such session (it ended): initialize a new one');
    session.transport.post(res, parsed.messages, parsed.batch, prefersEventStream(req.headers.accept), headerOf(req, 'mcp-protocol-version'));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/mcp') return problem(res, 404, 'not found: the MCP endpoint is /mcp');
    const refusal = checkOrigin(req, allowedOrigins, options.host);
    if (refusal) return problem(res, 403, refusal);
    const holder = await holderOf(req, options.auth);
    if (holder === null) {
      return problem(res, 401, 'a valid credential is required: Authorization: Bearer <token>', REFUSED, { 'www-authenticate': 'Bearer realm="guardctl mcp-proxy"' });
    }
    if (closing) return problem(res, 503, 'the gateway is stopping');
    const method = req.method ?? '';
    if (method !== 'POST' && method !== 'GET' && method !== 'DELETE') return problem(res, 405, `method ${method} is not allowed: POST, GET or DELETE`, REFUSED, { allow: 'GET, POST, DELETE' });
    const sid = headerOf(req, 'mcp-session-id');
    if (sid === undefined) {
      if (method !== 'POST') return problem(res, 400, 'no Mcp-Session-Id: start a session with an initialize request (POST)');
      return newSession(req, res, holder);
    }
    const session = sessions.get(sid);
    // Another key's session reads as unknown: a session id that leaked (a log, a proxy)
    // gives no one else its tools, its answers or its guard session's labels.
    if (!session || session.holder !== holder) return problem(res, 404, 'no such session (it ended, or was closed to make room): initialize a new one');
    session.lastActive = Date.now();
    const versionRefusal = protocolVersionRefusal(req.headers['mcp-protocol-version'], session.transport.negotiatedVersion);
    if (versionRefusal) return problem(res, 400, versionRefusal);
    const refused = acceptRefusal(req, method);
    if (refused) return problem(res, refused.status, refused.message);
    if (method === 'POST') return postTo(session, req, res);
    if (method === 'GET') return session.transport.listen(res, headerOf(req, 'last-event-id'));
    await endSession(sid, 'the client ended it (DELETE)');
    res.writeHead(200).end();
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      report(`request failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) problem(res, 500, 'the gateway failed to handle this request');
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;

  return {
    url: `http://${host}:${port}/mcp`,
    get sessionCount() {
      return sessions.size;
    },
    async close() {
      closing = true;
      await Promise.allSettled([...sessions.keys()].map((id) => endSession(id, 'the gateway is stopping')));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What a method's request must accept (the spec), as a refusal (406 Not Acceptable, 415 for a POST that is not JSON), or null. */
function acceptRefusal(req: IncomingMessage, method: string): { status: number; message: string } | null {
  const accept = req.headers.accept;
  if (method === 'POST') {
    if (!lists(accept, 'application/json') || !lists(accept, 'text/event-stream')) {
      return { status: 406, message: 'Not Acceptable: a POST must list both application/json and text/event-stream in Accept' };
    }
    if (!isJsonContentType(req.headers['content-type'])) return { status: 415, message: 'Unsupported Media Type: the body must be application/json' };
  }
  if (method === 'GET' && !lists(accept, 'text/event-stream')) return { status: 406, message: 'Not Acceptable: a GET must list text/event-stream in Accept' };
  return null;
}

/**
 * An initialize request: the method is read first, as the SDK's guard validates the whole
 * message with zod (every POST asks, and a failed parse builds an error).
 * 0.96 of the gateway's CPU per tools/call (HTTP face, HTTP upstream, 20 sdk controls; 8 interleaved rounds of 3,000, over the upstream's CPU).
 */
function isInitialize(message: JSONRPCMessage): boolean {
  return 'method' in message && message.method === 'initialize' && isInitializeRequest(message);
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** Host and Origin as the MCP spec asks of HTTP servers (against DNS rebinding); a reason when refused. */
function checkOrigin(req: IncomingMessage, allowed: ReadonlySet<string>, bound: string): string | null {
  const origin = req.headers.origin;
  if (origin !== undefined && !allowed.has(origin.toLowerCase())) {
    return `Origin ${JSON.stringify(origin)} is not allowed (list it with --allow-origin)`;
  }
  // A loopback gateway answers only to loopback names: a rebound DNS name reaching it is refused.
  if (isLoopback(bound)) {
    const hostname = (req.headers.host ?? '').replace(/:\d+$/, '').replace(/^\[|\]$/g, '').toLowerCase();
    if (!isLoopback(hostname) && hostname !== 'localhost') return `Host ${JSON.stringify(req.headers.host ?? '')} is not this gateway's`;
  }
  return null;
}

/**
 * Who the request's credential names, or null when it holds none this gateway accepts:
 * one holder for the one token (or no auth), and each of the guard server's keys its own,
 * by a digest so the key itself is not kept.
 */
async function holderOf(req: IncomingMessage, auth: McpHttpAuth): Promise<string | null> {
  if ('none' in auth) return '';
  // Node keeps the first of two Authorization headers and drops the other unseen; a proxy in
  // front may read the other one. A request naming two credentials holds none.
  if (countHeader(req, 'authorization') > 1) return null;
  const header = req.headers.authorization;
  const bearer = typeof header === 'string' && /^bearer\s+/i.test(header) ? header.replace(/^bearer\s+/i, '').trim() : undefined;
  const apiKey = req.headers['x-api-key'];
  const given = bearer ?? (typeof apiKey === 'string' ? apiKey : undefined);
  if (given === undefined || given === '') return null;
  if ('token' in auth) {
    const a = Buffer.from(given);
    const b = Buffer.from(auth.token);
    return a.length === b.length && timingSafeEqual(a, b) ? 'token' : null;
  }
  const valid = await auth.verifyKey(given).catch(() => false);
  return valid ? `key:${createHash('sha256').update(given).digest('hex')}` : null;
}

function countHeader(req: IncomingMessage, name: string): number {
  let count = 0;
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === name) count++;
  return count;
}
