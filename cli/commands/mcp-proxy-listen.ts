/** `guardctl mcp-proxy --listen`: the gateway's HTTP face, served until SIGINT or SIGTERM. */
import { UserError } from '../../src/errors.js';
import type { McpPins } from '../../src/adapters/mcp-pins.js';
import type { GuardAgent } from '../../src/sdk/index.js';
import type { McpListenPlan, McpProxyPlan } from './mcp-proxy-plan.js';

export async function serveMcpHttp(plan: McpProxyPlan, listen: McpListenPlan, guard: GuardAgent, serverUrl: string, pins?: McpPins): Promise<number> {
  const { startMcpHttpGateway } = await import('../../src/adapters/mcp-http.js');
  const { guardKeyVerifier, guardRequiresKeys } = await import('../../src/adapters/mcp-http-auth.js');
  if (listen.auth === 'guard-keys' && !(await guardRequiresKeys(serverUrl).catch(() => false))) {
    throw new UserError(
      `--auth-guard-keys: the guard server ${serverUrl} accepts requests without a key, so it cannot vouch for a client's key`,
      'configure API keys on the guard server, or set GUARD_MCP_TOKEN instead',
    );
  }
  const auth = listen.auth === 'none' ? { none: true as const } : listen.auth === 'token' ? { token: listen.token! } : { verifyKey: guardKeyVerifier(serverUrl) };
  const gateway = await startMcpHttpGateway({
    guard,
    pins,
    upstream: plan.upstream,
    host: listen.host,
    port: listen.port,
    auth,
    allowedOrigins: listen.allowedOrigins,
    maxSessions: listen.maxSessions,
    requestTimeoutMs: plan.requestTimeoutMs,
    maxPending: plan.maxPending,
    maxMessageBytes: plan.maxMessageBytes,
    ...(plan.serverName !== undefined && { serverName: plan.serverName }),
    ...(plan.approverApiKey !== undefined && { approverApiKey: plan.approverApiKey }),
  }).catch((error: unknown) => {
    throw new UserError(`could not listen on ${listen.host}:${listen.port}: ${error instanceof Error ? error.message : String(error)}`);
  });
  const how = listen.auth === 'none' ? 'no authentication (loopback only)' : listen.auth === 'token' ? 'bearer token GUARD_MCP_TOKEN' : "the guard server's keys";
  process.stderr.write(`[guardctl mcp-proxy] serving MCP at ${gateway.url} (${how})\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  process.stderr.write(`[guardctl mcp-proxy] ${signal}: closing ${gateway.sessionCount} session(s)\n`);
  await gateway.close();
  return 0;
}
