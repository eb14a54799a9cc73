/**
 * The MCP gateway's HTTP face (`guardctl mcp-proxy --listen HOST:PORT`): MCP over
 * streamable HTTP at `/mcp` (the MCP SDK's server transport: POST, GET and DELETE, SSE
 * streams, `Mcp-Session-Id`) for many clients at once, each guarded as over stdio.
 *
 * Each client session gets an upstream of its own: a process started for it (stdio) or a
 * session of its own on the HTTP server. A stdio MCP server serves one client: its roots,
 * subscriptions, log level and the requests it sends to "the client" belong to one
 * session, and a shared process would mix them (and let one session read another's
 * answers). The price is a process per session, which the session bound caps.
 *
 * Before MCP sees a request: the path is /mcp; the Host is one this gateway answers to
 * and the Origin, when a browser sends one, is listed (DNS rebinding, 403); the client
 * holds a credential (401).
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { GuardAgent } from '../sdk/agent.js';
import type { AdapterOptions } from './decisions.js';
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
  /** Sessions kept at once; past it the one idle longest is closed. Default 1000. */
  maxSessions?: number;
  serverName?: string;
  requestTimeoutMs?: number;
  maxMessageBytes?: number;
  /** The key a person's answer to an approval question is recorded with (McpProxyOptions.approverApiKey). */
  approverApiKey?: string;
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
  transport: StreamableHTTPServerTransport;
  proxy: McpProxy | null;
  lastActive: number;
}

const DEFAULT_MAX_SESSIONS = 1000;
/** An initialize request is small; a session-less POST is read only up to this. */
const MAX_INITIALIZE_BYTES = 1024 * 1024;

export async function startMcpHttpGateway(options: McpHttpGatewayOptions): Promise<McpHttpGateway> {
  const report = options.report ?? ((line: string) => void process.stderr.write(`[guardctl mcp-proxy] ${line}\n`));
  const maxSessions = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
  const sessions = new Map<string, Session>();
  const allowedOrigins = new Set((options.allowedOrigins ?? []).map((o) => o.toLowerCase()));
  let closing = false;

  const endSession = async (id: string, why: string): Promise<void> => {
    const session = sessions.get(id);
    if (!session) return;
    sessions.delete(id);
    report(`session ${id} ended: ${why}`);
    await session.proxy?.close();
    await session.transport.close().catch(() => undefined);
  };

  /** Makes room for one more session: the one idle longest goes. */
  const makeRoom = async (): Promise<void> => {
    while (sessions.size >= maxSessions) {
      let oldest: [string, Session] | undefined;
      for (const entry of sessions) if (!oldest || entry[1].lastActive < oldest[1].lastActive) oldest = entry;
      if (!oldest) return;
      await endSession(oldest[0], `${maxSessions} sessions are open, and it was idle the longest`);
    }
  };

  const newSession = async (req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> => {
    await makeRoom();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, opened),
    });
    const opened: Session = { transport, proxy: null, lastActive: Date.now() };
    try {
      opened.proxy = await startMcpProxy({
        guard: options.guard,
        upstream: options.upstream,
        client: transport,
        pins: options.pins,
        ...(options.serverName !== undefined && { serverName: options.serverName }),
        ...(options.requestTimeoutMs !== undefined && { requestTimeoutMs: options.requestTimeoutMs }),
        ...(options.maxMessageBytes !== undefined && { maxMessageBytes: options.maxMessageBytes }),
        ...(options.approverApiKey !== undefined && { approverApiKey: options.approverApiKey }),
        onDecision: options.onDecision,
        // The MCP session id, once the SDK has made it: the session the checks belong to.
        sessionId: () => transport.sessionId,
        report: (line) => report(`session ${transport.sessionId ?? '(new)'}: ${line}`),
      });
    } catch (error) {
      report(`could not start the MCP server for a new session: ${error instanceof Error ? error.message : String(error)}`);
      return void problem(res, 502, 'the gateway could not reach its MCP server');
    }
    // The upstream went away (or the client sent DELETE): the session ends with it.
    void opened.proxy.done.then((exit) => {
      const id = transport.sessionId;
      if (id !== undefined && sessions.get(id) === opened) void endSession(id, exit.reason);
    });
    await transport.handleRequest(req, res, body);
    // Refused by the SDK (a header missing, another protocol): no session, so no upstream either.
    const id = transport.sessionId;
    if (id === undefined || sessions.get(id) !== opened) await opened.proxy.close();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/mcp') return void problem(res, 404, 'not found: the MCP endpoint is /mcp');
    const refusal = checkOrigin(req, allowedOrigins, options.host);
    if (refusal) return void problem(res, 403, refusal);
    if (!(await authenticated(req, options.auth))) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="guardctl mcp-proxy"');
      return void problem(res, 401, 'a valid credential is required: Authorization: Bearer <token>');
    }
    if (closing) return void problem(res, 503, 'the gateway is stopping');
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const session = sessions.get(sid);
      if (!session) return void problem(res, 404, 'no such session (it ended, or was closed to make room): initialize a new one');
      session.lastActive = Date.now();
      return void (await session.transport.handleRequest(req, res));
    }
    if (req.method !== 'POST') return void problem(res, 400, 'no Mcp-Session-Id: start a session with an initialize request (POST)');
    const body = await readJson(req, MAX_INITIALIZE_BYTES);
    if (!body.ok) return void problem(res, body.status, body.message);
    if (!isInitializeRequest(body.value)) return void problem(res, 400, 'no Mcp-Session-Id: start a session with an initialize request');
    await newSession(req, res, body.value);
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

async function authenticated(req: IncomingMessage, auth: McpHttpAuth): Promise<boolean> {
  if ('none' in auth) return true;
  const header = req.headers.authorization;
  const bearer = typeof header === 'string' && /^bearer\s+/i.test(header) ? header.replace(/^bearer\s+/i, '').trim() : undefined;
  const apiKey = req.headers['x-api-key'];
  const given = bearer ?? (typeof apiKey === 'string' ? apiKey : undefined);
  if (given === undefined || given === '') return false;
  if ('token' in auth) {
    const a = Buffer.from(given);
    const b = Buffer.from(auth.token);
    return a.length === b.length && timingSafeEqual(a, b);
  }
  return auth.verifyKey(given).catch(() => false);
}

type Read = { ok: true; value: unknown } | { ok: false; status: number; message: string };

async function readJson(req: IncomingMessage, max: number): Promise<Read> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max) return { ok: false, status: 413, message: `an initialize request larger than ${max} bytes is not read` };
    chunks.push(chunk);
  }
  try {
    return { ok: true, value: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch {
    return { ok: false, status: 400, message: 'the body is not JSON' };
  }
}

/** A JSON-RPC error body, as the MCP SDK's transport answers HTTP-level refusals. */
function problem(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}
