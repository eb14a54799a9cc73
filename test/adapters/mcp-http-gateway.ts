/**
 * The gateway's HTTP face as its tests start it: a real MCP server process per session
 * (test/fixtures/mcp/server.mjs unless `upstream` says) behind `startMcpHttpGateway` on a free loopback port, with
 * the decisions and report lines it gave, closed (gateway, then guard) by `cleanup`.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GuardDecision } from '../../src/adapters/decisions.js';
import { startMcpHttpGateway, type McpHttpGateway, type McpHttpGatewayOptions } from '../../src/adapters/mcp-http.js';
import { GuardAgent, type ControlRecord } from '../../src/sdk/index.js';
import { quietLogger } from './guarded-agent.js';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const fixture = join(root, 'test/fixtures/mcp/server.mjs');

export interface TestGatewayOptions extends Partial<Pick<McpHttpGatewayOptions, 'upstream' | 'auth' | 'maxSessions' | 'allowedOrigins' | 'held' | 'maxPending' | 'sendTimeoutMs'>> {
  agentName: string;
  controls?: ControlRecord[];
  /** A guard of a real server in place of one holding `controls` (`agentName` unused); the caller shuts it down. */
  guard?: GuardAgent;
}

export interface TestGateway {
  gw: McpHttpGateway;
  decisions: GuardDecision[];
  reports: string[];
}

/** Starts a gateway (no credential unless `auth` says) whose close is pushed on `cleanup`. */
export async function startTestGateway(cleanup: Array<() => Promise<void>>, options: TestGatewayOptions): Promise<TestGateway> {
  const guard = options.guard ?? new GuardAgent({ agentName: options.agentName, serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, options.controls ?? []);
  const decisions: GuardDecision[] = [];
  const reports: string[] = [];
  const gw = await startMcpHttpGateway({
    guard,
    upstream: options.upstream ?? { command: process.execPath, args: [fixture] },
    host: '127.0.0.1',
    port: 0,
    auth: options.auth ?? { none: true },
    ...(options.maxSessions !== undefined && { maxSessions: options.maxSessions }),
    ...(options.allowedOrigins !== undefined && { allowedOrigins: options.allowedOrigins }),
    ...(options.held !== undefined && { held: options.held }),
    ...(options.maxPending !== undefined && { maxPending: options.maxPending }),
    ...(options.sendTimeoutMs !== undefined && { sendTimeoutMs: options.sendTimeoutMs }),
    onDecision: (d) => decisions.push(d),
    report: (l) => reports.push(l),
  });
  cleanup.push(async () => {
    await gw.close();
    if (options.guard === undefined) await guard.shutdown();
  });
  return { gw, decisions, reports };
}
