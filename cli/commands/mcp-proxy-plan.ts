/** What `guardctl mcp-proxy` was asked to run: parsed options, shared by its stdio and HTTP faces. */
import type { McpUpstream } from '../../src/adapters/mcp.js';
import type { Disclosure } from '../../src/sdk/verdict.js';

/** The HTTP face: where it listens and how clients authenticate. */
export interface McpListenPlan {
  host: string;
  port: number;
  auth: 'token' | 'guard-keys' | 'none';
  token: string | undefined;
  allowedOrigins: string[];
  maxSessions: number;
}

export interface McpProxyPlan {
  agentName: string;
  upstream: McpUpstream;
  serverName: string | undefined;
  requestTimeoutMs: number;
  disclosure: Disclosure;
  failOpen: boolean;
  allowUnguarded: boolean;
  /** GUARD_MCP_APPROVER_API_KEY: records a person's answer to an approval question (MCP elicitation). */
  approverApiKey: string | undefined;
  listen: McpListenPlan | undefined;
  /** What a tool that drifted from its pin gets: refused and hidden (block) or only reported (warn). */
  onDrift: 'block' | 'warn';
  /** Refuse to start when the guard server has no McpServer document named serverName; list and call nothing if it is deleted later. */
  requirePin: boolean;
  /** A client's requests in flight at once (per session with --listen). */
  maxPending: number;
  /** The largest message read from the MCP server (and the stdio client). */
  maxMessageBytes: number;
}
