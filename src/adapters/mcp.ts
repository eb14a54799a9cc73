/**
 * `guardctl/mcp`: a guarding MCP gateway (what `guardctl mcp-proxy` runs).
 *
 *   const proxy = await startMcpProxy({ guard, upstream: { command: 'node', args: ['server.js'] } });
 *   process.exitCode = (await proxy.done).code;
 *
 * It speaks MCP to a client over this process's stdin and stdout (or any transport) and
 * to one MCP server: a process it starts (stdio) or a streamable-HTTP URL. Every
 * `tools/call` is a step `{type: 'tool', name, input: arguments, context: {mcp_server}}`
 * checked `pre`, and its result is checked `post`; everything else passes through
 * untouched (mcp-relay.ts). `execution: sdk` controls run in this process.
 */
import type { McpPins } from './mcp-pins.js';
import { basename } from 'node:path';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { GuardAgent } from '../sdk/agent.js';
import type { AdapterOptions } from './decisions.js';
import { upstreamEnv } from './mcp-env.js';
import { HttpUpstreamTransport } from './mcp-http-upstream.js';
import { reportedError } from './mcp-http-request.js';
import { McpRelay } from './mcp-relay.js';
import { ChildProcessTransport, StdioLineServerTransport, type LineEvents } from './mcp-stdio.js';

export type { McpRelay, RelayOptions } from './mcp-relay.js';
export type { GatewayApprovalOptions } from './mcp-approval.js';
export type { Drift, DriftKind, McpPins, OnDrift, PinsOptions } from './mcp-pins.js';

export type { AdapterOptions, GuardDecision } from './decisions.js';
export type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

/** The MCP server behind the proxy: a command to start (stdio) or a streamable-HTTP URL. */
export type McpUpstream =
  | {
      command: string;
      args?: string[];
      cwd?: string;
      /** Names of this process's environment the server gets besides PATH, HOME and the like (mcp-env.ts). */
      passEnv?: string[];
      /** Values set for the server. */
      env?: Record<string, string>;
    }
  | { url: string; headers?: Record<string, string> };

export interface McpProxyOptions extends AdapterOptions {
  guard: GuardAgent;
  upstream: McpUpstream;
  /** The client's side; default: this process's stdin and stdout. */
  client?: Transport;
  /**
   * `context.mcp_server` of every step. Default: the server's own name (serverInfo.name of
   * its initialize answer), and until then the command's file name or the URL's host.
   */
  serverName?: string;
  /** A request the server has not answered after this long is answered with an error. Default 120000; 0: never. */
  requestTimeoutMs?: number;
  /** Largest message read from either side, in bytes. Default 64 MiB (results of 10 MB and more pass). */
  maxMessageBytes?: number;
  /** The client's requests in flight at once (McpRelay's DEFAULT_MAX_PENDING). */
  maxPending?: number;
  /** The client's session, for the HTTP face: reported with each decision (GuardDecision.sessionId). */
  sessionId?: () => string | undefined;
  /**
   * The key a person's answer to an approval question (MCP elicitation) is recorded with:
   * an admin key or one of GUARD_APPROVER_API_KEYS. Default: the guard's own key; a key that
   * may not decide leaves the decision to guardctl (docs/approvals.md).
   */
  approverApiKey?: string;
  /** A pinned server's rules (mcp-pins.ts): only pinned, unchanged, permitted tools are listed and called. */
  pins?: McpPins | undefined;
  /** Where the proxy reports problems (a line each); default: stderr, as stdout carries MCP. */
  report?: (line: string) => void;
}

/** Why the proxy stopped, and the exit code that says it. */
export interface McpProxyExit {
  code: number;
  reason: string;
}

export interface McpProxy {
  /** Settles when either side goes away: the client (code 0) or the server (code 1). */
  readonly done: Promise<McpProxyExit>;
  readonly relay: McpRelay;
  /** Stops both sides (the server process is ended). */
  close(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export async function startMcpProxy(options: McpProxyOptions): Promise<McpProxy> {
  const report = options.report ?? ((line: string) => void process.stderr.write(`[guardctl mcp-proxy] ${line}\n`));
  const maxBufferSize = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const upstream = options.upstream;
  const isHttp = 'url' in upstream;
  const server: Transport & LineEvents = isHttp
    ? new HttpUpstreamTransport(new URL(upstream.url), { headers: upstream.headers, maxMessageBytes: maxBufferSize })
    : new ChildProcessTransport({
        command: upstream.command,
        args: upstream.args ?? [],
        // Never the gateway's whole environment: it holds the guard's own credentials.
        env: upstreamEnv(process.env, upstream.passEnv, upstream.env),
        cwd: upstream.cwd,
        maxMessageBytes: maxBufferSize,
      });
  const client: Transport & LineEvents = options.client ?? new StdioLineServerTransport(process.stdin, process.stdout, maxBufferSize);
  const limit = sizeText(maxBufferSize);

  let finish!: (exit: McpProxyExit) => void;
  const done = new Promise<McpProxyExit>((resolve) => (finish = resolve));
  let stopping = false;

  // Which of the guard server's evaluators count decides which calls the relay keeps (mcp-recent-steps.ts).
  await options.guard.learnServerEvaluators().catch((error: unknown) => {
    report(`could not read the guard server's evaluators (${reportedError(error)}): its plugins' controls keep every call in their scope by name and input, as if each counted and read the whole step`);
  });
  const relay = new McpRelay({
    guard: options.guard,
    client,
    server,
    serverName: options.serverName ?? (isHttp ? new URL(upstream.url).host : basename(upstream.command)),
    serverNameFixed: options.serverName !== undefined,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxPending: options.maxPending,
    report,
    onDecision: options.onDecision,
    sessionId: options.sessionId,
    approverApiKey: options.approverApiKey,
    pins: options.pins,
    onProtocolVersion: (version) => (server as Partial<HttpUpstreamTransport>).setProtocolVersion?.(version),
  });

  // Every caller waits for the same stop: close() after the client went away returns once the server is ended too.
  // Set before anything runs: closing a side calls its onclose, which calls stop again (re-entrantly).
  let stopped: Promise<void> | undefined;
  const stop = (exit: McpProxyExit): Promise<void> => {
    if (stopped) return stopped;
    stopping = true;
    let settle!: () => void;
    stopped = new Promise((resolve) => (settle = resolve));
    relay.close();
    void Promise.allSettled([server.close(), client.close()]).then(() => {
      finish(exit);
      settle();
    });
    return stopped;
  };

  server.onmessage = (message: JSONRPCMessage) => relay.fromServer(message);
  server.onerror = (error) => {
    // A line that is not JSON-RPC (the SDK's reader names the parse error); other
    // transport errors (an HTTP request that failed) are answered where they happen.
    if (isParseError(error)) relay.serverGarbled(new Error(unreadable(error)));
    else report(`MCP server: ${reportedError(error)}`);
  };
  server.onoversize = () => relay.serverOversize(limit);
  // MCP has no batches since 2025-06-18: a server that sends one is not speaking it.
  server.onbatch = () => relay.serverGarbled(new Error('a JSON-RPC batch'));
  server.onclose = () => {
    if (stopping) return;
    const reason = `the MCP server ${isHttp ? 'connection closed' : 'exited'}`;
    report(`${reason}; answering ${relay.pendingCount} pending request(s) with an error`);
    relay.failAll(ErrorCode.ConnectionClosed, `${reason} before answering`);
    void stop({ code: 1, reason });
  };
  client.onmessage = (message: JSONRPCMessage) => relay.fromClient(message);
  client.onerror = (error) => report(`client: ${isParseError(error) ? `a message that is not JSON-RPC (${unreadable(error)}); it was dropped` : error.message}`);
  // Its stdin closed (the stdio transport's close): the proxy closes the server and is done.
  client.onclose = () => void stop({ code: 0, reason: 'the client closed the connection' });
  client.onoversize = () => report(`a message of the client is larger than ${limit}, the most the proxy reads; it was skipped (the client gets no answer to it)`);
  client.onbatch = (items) => relay.clientBatch(items);

  try {
    await server.start();
  } catch (error) {
    const what = isHttp ? upstream.url : upstream.command;
    throw new Error(`could not start the MCP server ${JSON.stringify(what)}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  await client.start();

  return { done, relay, close: () => stop({ code: 0, reason: 'closed' }) };
}

/**
 * What was wrong with a line that is not JSON-RPC, never what it held: JSON.parse's message
 * quotes the line's start and zod's names its keys, and the line can be what a tool read.
 */
function unreadable(error: Error): string {
  if (error instanceof SyntaxError) return 'not JSON';
  const issues = (error as { issues?: unknown }).issues;
  if (error.name === 'ZodError' && Array.isArray(issues)) return `JSON, but not of a JSON-RPC message's shape (${[...new Set(issues.map((i) => String((i as { code?: unknown }).code)))].join(', ')})`;
  return error.message;
}

function isParseError(error: Error): boolean {
  return error instanceof SyntaxError || error.name === 'ZodError' || /JSON|Unexpected token|invalid_/i.test(error.message);
}

function sizeText(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return Number.isInteger(mib) ? `${mib} MiB` : `${bytes} bytes`;
}
