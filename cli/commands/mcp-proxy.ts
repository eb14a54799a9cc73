import type { Command } from 'commander';
import type { McpUpstream } from '../../src/adapters/mcp.js';
import { ENV_NAME } from '../../src/adapters/mcp-env.js';
import { isLoopback } from '../../src/adapters/mcp-loopback.js';
import { UserError } from '../../src/errors.js';
import { init, UnguardedAgentError, type GuardAgent, type GuardLogger } from '../../src/sdk/index.js';
import { MAX_EVENTS_PER_REQUEST } from '../../src/sdk/events.js';
import { DISCLOSURES, type Disclosure } from '../../src/sdk/verdict.js';
import { withExamples } from '../help.js';
import { addConnectionOptions, connectionOf, parseDuration, type ConnectionFlags } from '../options.js';
import { serveMcpHttp } from './mcp-proxy-listen.js';
import { startPins } from './mcp-proxy-pins.js';
import type { McpListenPlan, McpProxyPlan } from './mcp-proxy-plan.js';

export type { McpListenPlan, McpProxyPlan } from './mcp-proxy-plan.js';

export interface McpProxyFlags extends ConnectionFlags {
  agent?: string;
  upstreamUrl?: string;
  header?: string[];
  passEnv?: string[];
  mcpServerName?: string;
  requestTimeout?: string;
  disclosure?: string;
  failOpen?: boolean;
  allowUnguarded?: boolean;
  listen?: string;
  /** `--no-auth` sets it false. */
  auth?: boolean;
  authGuardKeys?: boolean;
  allowOrigin?: string[];
  maxSessions?: string;
  onDrift?: string;
  requirePin?: boolean;
  maxPending?: string;
  maxMessage?: string;
}

export function registerMcpProxy(program: Command): void {
  const command = addConnectionOptions(
    program
      .command('mcp-proxy')
      .description('Guard an MCP server: speak MCP on stdin/stdout, check every tools/call against the agent\'s controls')
      .usage('--agent <name> [options] -- <command> [args...]  |  --agent <name> --upstream-url <url>')
      .argument('[command...]', 'the MCP server to start (after --), spoken to over stdio')
      .requiredOption('--agent <name>', 'the agent whose controls apply (registered at start)')
      .option('--upstream-url <url>', 'a streamable-HTTP MCP server instead of a command')
      .option('--header <name:value>', 'an HTTP header for --upstream-url (repeatable)', (v: string, all: string[] = []) => [...all, v])
      .option('--pass-env <NAME>', "pass this variable of the proxy's environment to the MCP server (repeatable; by default it gets only PATH, HOME, locale and temp-directory variables, never GUARD_API_KEY)", (v: string, all: string[] = []) => [...all, v])
      .option('--mcp-server-name <name>', "context.mcp_server of each step, and the kind: McpServer document whose pinned tools apply (default: the server's own name)")
      .option('--on-drift <mode>', 'a tool changed since it was pinned, or not pinned: block (hide and refuse it) or warn (list and forward it, report it) (default block)')
      .option('--require-pin', 'refuse to start when the guard server has no McpServer document named --mcp-server-name; if it is deleted later, list no tool and refuse every call until one is applied')
      .option('--request-timeout <duration>', 'answer a request the MCP server has not answered after this long with an error; 0: never (default 120s)')
      .option('--max-pending <n>', "a client's requests in flight at once (per session with --listen); past it a request is answered with an error (default 1000)")
      .option('--max-message <size>', 'the largest message read from the MCP server (and, over stdio, from the client), as bytes, KiB or MiB (default 64MiB)')
      .option('--disclosure <level>', `how much of the deciding control the model reads: ${DISCLOSURES.join(', ')} (default minimal)`)
      .option('--fail-open', 'let calls through when the guard server cannot be reached (default: refuse them)')
      .option('--listen <host:port>', 'serve MCP over streamable HTTP at http://host:port/mcp to many clients, instead of stdin/stdout')
      .option('--auth-guard-keys', "--listen: clients authenticate with a key of the guard server (default: the bearer token in GUARD_MCP_TOKEN)")
      .option('--no-auth', '--listen on a loopback address: clients need no credential')
      .option('--allow-origin <origin>', '--listen: a browser Origin allowed to call (repeatable; any other Origin gets 403)', (v: string, all: string[] = []) => [...all, v])
      .option('--max-sessions <n>', '--listen: sessions kept at once; past it the one idle longest of the key holding the most is closed (default 1000)')
      .option('--allow-unguarded', 'start even when no control is in force for the agent (default: refuse, as a misspelt --agent is the usual cause)'),
  ).action(async (args: string[], flags: McpProxyFlags) => {
    process.exitCode = await runMcpProxy(args, flags);
  });
  withExamples(command, [
    ['guard an MCP server started over stdio (what an MCP client config runs in its place)', 'guardctl mcp-proxy --agent desktop-assistant -- node warehouse-server.js'],
    ['guard a streamable-HTTP MCP server, with its bearer token', 'guardctl mcp-proxy --agent desktop-assistant --upstream-url http://127.0.0.1:3000/mcp --header "Authorization: Bearer $TOKEN"'],
    ['a shared gateway for a team, in front of a remote MCP server', 'GUARD_MCP_TOKEN=$(openssl rand -hex 32) guardctl mcp-proxy --agent team --listen 0.0.0.0:8080 --upstream-url https://mcp.example.com/mcp'],
    ['against another guard server, showing the model the deciding control\'s name', 'GUARD_URL=http://guard:8000 guardctl mcp-proxy --agent ide --disclosure name -- npx some-mcp-server'],
    ['on an ask control, record the answer the person gives in the client (MCP elicitation) with an approver key', 'GUARD_MCP_APPROVER_API_KEY=$APPROVER_KEY guardctl mcp-proxy --agent desk -- node warehouse-server.js'],
  ]);
}

/** Checks the flags; pure, so that every refusal is testable without starting anything. */
export function planMcpProxy(command: string[], flags: McpProxyFlags, env: NodeJS.ProcessEnv = process.env): McpProxyPlan {
  const agentName = flags.agent?.trim() ?? '';
  if (agentName === '') throw new UserError('--agent needs a name', 'the agent whose controls the proxy applies, for example --agent desktop-assistant');
  if (flags.upstreamUrl !== undefined && command.length > 0) {
    throw new UserError('give either a command after -- or --upstream-url, not both');
  }
  let upstream: McpUpstream;
  if (flags.upstreamUrl !== undefined) {
    if (!/^https?:\/\//i.test(flags.upstreamUrl)) throw new UserError(`--upstream-url "${flags.upstreamUrl}" is not an http(s) URL`);
    upstream = { url: flags.upstreamUrl, headers: headersOf(flags.header ?? []) };
  } else {
    const [executable, ...args] = command;
    if (executable === undefined) {
      throw new UserError('no MCP server to guard', 'give its command after --, for example: guardctl mcp-proxy --agent a -- npx some-mcp-server');
    }
    upstream = { command: executable, args, passEnv: passEnvOf(flags.passEnv ?? []) };
  }
  const disclosure = (flags.disclosure ?? 'minimal') as Disclosure;
  if (!DISCLOSURES.includes(disclosure)) throw new UserError(`--disclosure must be one of ${DISCLOSURES.join(', ')}`);
  return {
    agentName,
    upstream,
    serverName: flags.mcpServerName,
    requestTimeoutMs: requestTimeoutOf(flags.requestTimeout),
    disclosure,
    failOpen: flags.failOpen === true,
    allowUnguarded: flags.allowUnguarded === true,
    approverApiKey: env.GUARD_MCP_APPROVER_API_KEY?.trim() || undefined,
    listen: flags.listen === undefined ? undefined : listenPlanOf(flags, env),
    onDrift: onDriftOf(flags.onDrift),
    requirePin: requirePinOf(flags),
    maxPending: positiveOf('--max-pending', flags.maxPending, 1000),
    maxMessageBytes: messageSizeOf(flags.maxMessage),
  };
}

function positiveOf(flag: string, text: string | undefined, otherwise: number): number {
  if (text === undefined) return otherwise;
  const n = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(n) || n < 1) throw new UserError(`${flag} "${text}" is not a positive whole number`);
  return n;
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kib: 1024, mib: 1024 * 1024 };

/** --max-message: bytes, KiB or MiB; at least 1 KiB (an initialize answer must fit), at most 1 GiB. */
function messageSizeOf(text: string | undefined): number {
  if (text === undefined) return 64 * 1024 * 1024;
  const match = /^\s*(\d+)\s*([a-z]*)\s*$/i.exec(text);
  const unit = SIZE_UNITS[match?.[2]?.toLowerCase() ?? 'none'];
  const bytes = match && unit !== undefined ? Number(match[1]) * unit : NaN;
  if (!(bytes >= 1024 && bytes <= 1024 ** 3)) throw new UserError(`--max-message "${text}" is not a size from 1KiB to 1024MiB`, 'write it as bytes or with KiB or MiB, for example --max-message 16MiB');
  return bytes;
}

function onDriftOf(text: string | undefined): 'block' | 'warn' {
  if (text === undefined || text === 'block' || text === 'warn') return text ?? 'block';
  throw new UserError(`--on-drift must be block or warn, not "${text}"`);
}

function requirePinOf(flags: McpProxyFlags): boolean {
  if (flags.requirePin === true && flags.mcpServerName === undefined) throw new UserError('--require-pin needs --mcp-server-name', 'the name of the kind: McpServer document that pins this server\'s tools');
  return flags.requirePin === true;
}

function listenPlanOf(flags: McpProxyFlags, env: NodeJS.ProcessEnv): McpListenPlan {
  const text = flags.listen!.trim();
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(text);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (host === undefined || !(port >= 0 && port <= 65535)) throw new UserError(`--listen "${text}" is not host:port`, 'for example --listen 127.0.0.1:8080 (port 0: a free one)');
  const token = env.GUARD_MCP_TOKEN?.trim() || undefined;
  let auth: McpListenPlan['auth'];
  if (flags.auth === false) {
    if (!isLoopback(host)) throw new UserError(`--no-auth is allowed on a loopback address only, not ${host}`, 'set GUARD_MCP_TOKEN (or --auth-guard-keys) so that clients must authenticate');
    auth = 'none';
  } else if (flags.authGuardKeys === true) {
    auth = 'guard-keys';
  } else if (token !== undefined) {
    auth = 'token';
  } else {
    throw new UserError('--listen needs a way to authenticate clients', 'set GUARD_MCP_TOKEN to a secret bearer token, or pass --auth-guard-keys (keys of the guard server); on a loopback address --no-auth serves without one');
  }
  const maxSessions = positiveOf('--max-sessions', flags.maxSessions, 1000);
  for (const origin of flags.allowOrigin ?? []) {
    if (!/^https?:\/\/[^/\s]+$/i.test(origin)) throw new UserError(`--allow-origin "${origin}" is not an origin`, 'write scheme://host[:port], for example --allow-origin https://app.example.com');
  }
  return { host, port, auth, token: auth === 'token' ? token : undefined, allowedOrigins: flags.allowOrigin ?? [], maxSessions };
}

function requestTimeoutOf(text: string | undefined): number {
  if (text === undefined) return 120_000;
  if (text.trim() === '0') return 0;
  try {
    return parseDuration(text);
  } catch {
    throw new UserError(`--request-timeout "${text}" is not a duration`, 'write it as 120s, 500ms or 2m (0: never)');
  }
}

function passEnvOf(names: string[]): string[] {
  const all = names.flatMap((n) => n.split(',')).map((n) => n.trim()).filter((n) => n !== '');
  for (const name of all) {
    if (!ENV_NAME.test(name)) throw new UserError(`--pass-env "${name}" is not an environment variable name`, 'give the name only, for example --pass-env GITHUB_TOKEN');
  }
  return all;
}

function headersOf(pairs: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf(':');
    if (at <= 0) throw new UserError(`--header "${pair}" is not name:value`);
    headers[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return headers;
}

/** stdout carries MCP: everything the proxy says goes to stderr. */
const stderrLogger: GuardLogger = {
  info: (m) => void process.stderr.write(`[guardctl mcp-proxy] ${m}\n`),
  warn: (m) => void process.stderr.write(`[guardctl mcp-proxy] warning: ${m}\n`),
};

/** Exit code: 0 when the client closed, 1 when the MCP server went away. */
export async function runMcpProxy(command: string[], flags: McpProxyFlags): Promise<number> {
  const plan = planMcpProxy(command, flags);
  const connection = connectionOf(flags);
  let guard: GuardAgent;
  try {
    guard = await init({
      agentName: plan.agentName,
      serverUrl: connection.serverUrl,
      apiKey: connection.apiKey,
      timeoutMs: connection.timeoutMs,
      failMode: plan.failOpen ? 'open' : 'closed',
      disclosure: plan.disclosure,
      agentDescription: 'MCP gateway (guardctl mcp-proxy)',
      logger: stderrLogger,
      allowUnguarded: plan.allowUnguarded,
      // A gateway records an event per control per check (20 per tools/call with 20 controls): posted
      // 1,000 at a time, not 100. 0.71 of the gateway's CPU time per tools/call (3 interleaved runs, 20 sdk controls).
      eventBatchSize: MAX_EVENTS_PER_REQUEST,
      // Posted from a thread of their own, off the thread every call waits for (event-thread.ts): main-thread CPU per
      // tools/call 0.51-0.86 (stdio, 6 interleaved rounds) and 0.83-1.08, median 0.87 (HTTP face); the process's total about the same.
      eventThread: true,
    });
  } catch (error) {
    if (error instanceof UnguardedAgentError) {
      const guess = error.suggestions.length > 0 ? `; did you mean ${error.suggestions.map((s) => `--agent ${s}`).join(' or ')}?` : '';
      throw new UserError(
        `agent "${error.agentName}" has no controls on ${connection.serverUrl} (${error.registered ? 'none in force' : 'the server does not know it'})${guess}`,
        'every tool call would pass unchecked: check --agent, link controls to the agent, or pass --allow-unguarded to start anyway',
      );
    }
    // Without its controls the proxy would pass every call unchecked: it does not start.
    throw new UserError(
      `could not load the controls of agent "${plan.agentName}" from ${connection.serverUrl}: ${error instanceof Error ? error.message : String(error)}`,
      'start the guard server (guardctl serve) or point --server / GUARD_URL at it; the proxy never runs unguarded',
    );
  }
  try {
    const pins = await startPins(plan, connection);
    if (plan.listen) return await serveMcpHttp(plan, plan.listen, guard, connection.serverUrl, pins);
    // Loaded here: the MCP SDK is needed by this command only, not at every CLI start.
    const { startMcpProxy } = await import('../../src/adapters/mcp.js');
    const proxy = await startMcpProxy({
      guard,
      pins,
      upstream: plan.upstream,
      requestTimeoutMs: plan.requestTimeoutMs,
      maxPending: plan.maxPending,
      maxMessageBytes: plan.maxMessageBytes,
      ...(plan.serverName !== undefined && { serverName: plan.serverName }),
      ...(plan.approverApiKey !== undefined && { approverApiKey: plan.approverApiKey }),
    }).catch((error: unknown) => {
      throw new UserError(error instanceof Error ? error.message : String(error), 'check the command after -- (or --upstream-url)');
    });
    const exit = await proxy.done;
    if (exit.code !== 0) process.stderr.write(`[guardctl mcp-proxy] stopping: ${exit.reason}\n`);
    return exit.code;
  } finally {
    await guard.shutdown();
  }
}
