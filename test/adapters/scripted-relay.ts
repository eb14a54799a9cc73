/**
 * The MCP relay between a raw JSON-RPC client and a scripted server, over the MCP SDK's
 * in-memory transports: the harness of the gateway's attack passes, where the server says
 * exactly what an attacker's would.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import { McpRelay } from '../../src/adapters/mcp-relay.js';
import type { McpPins } from '../../src/adapters/mcp-pins.js';
import type { ControlRecord } from '../../src/model/index.js';
import { GuardAgent } from '../../src/sdk/index.js';
import { quietLogger } from './guarded-agent.js';

/** The tools the scripted server declares: read_file, read_secret and 40 others. */
export const TOOLS = [
  { name: 'read_file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } },
  { name: 'read_secret', inputSchema: { type: 'object' } },
  ...Array.from({ length: 40 }, (_, i) => ({ name: `tool_${i}`, inputSchema: { type: 'object' } })),
];

/** How the server answers a request other than tools/list. */
export type Script = (request: JSONRPCRequest, send: (message: JSONRPCMessage) => void) => void;

export interface ScriptedRelayOptions {
  /** The relay's server side in place of the scripted server (an HTTP upstream). */
  upstream?: Transport | undefined;
  pins?: McpPins | undefined;
  /** What the server declares (default TOOLS). */
  tools?: unknown[];
  requestTimeoutMs?: number;
  /** The guard in place of one holding `records` in the relay's process (a real server's agent); the relay does not shut it down. */
  guard?: GuardAgent | undefined;
}

/**
 * A relay between a raw client and a server that answers tools/list with `tools` and
 * everything else with `script` (or `upstream` in its place), guarded by `records` run in
 * the relay's process. `close` ends all of it.
 */
export async function scriptedRelay(agentName: string, script: Script, records: ControlRecord[], options: ScriptedRelayOptions = {}) {
  const { upstream, pins, tools = TOOLS, requestTimeoutMs = 0 } = options;
  const [clientSide, relayClientSide] = InMemoryTransport.createLinkedPair();
  const [inMemoryRelaySide, serverSide] = InMemoryTransport.createLinkedPair();
  const relayServerSide = upstream ?? inMemoryRelaySide;
  const guard = options.guard ?? new GuardAgent({ agentName, serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, records);
  const reports: string[] = [];
  const relay = new McpRelay({ guard, client: relayClientSide, server: relayServerSide, serverName: 'hostile', serverNameFixed: true, requestTimeoutMs, report: (l) => reports.push(l), pins });
  relayClientSide.onmessage = (m) => relay.fromClient(m);
  relayServerSide.onmessage = (m: JSONRPCMessage) => relay.fromServer(m);
  const seenByServer: JSONRPCMessage[] = [];
  const toServer = (message: JSONRPCMessage): void => void serverSide.send(message);
  serverSide.onmessage = (m) => {
    seenByServer.push(m);
    if (!('method' in m) || !('id' in m)) return;
    if (m.method === 'tools/list') toServer({ jsonrpc: '2.0', id: m.id, result: { tools } });
    else script(m, toServer);
  };
  const received: JSONRPCMessage[] = [];
  clientSide.onmessage = (m) => received.push(m);
  for (const t of [clientSide, relayClientSide, relayServerSide, serverSide]) await t.start();
  const close = async (): Promise<void> => {
    relay.close();
    await clientSide.close();
    await serverSide.close();
    if (options.guard === undefined) await guard.shutdown();
  };
  const send = (message: JSONRPCMessage): Promise<void> => clientSide.send(message);
  const answerTo = async (id: string | number): Promise<JSONRPCMessage> => {
    await expect.poll(() => received.some((m) => 'id' in m && m.id === id && !('method' in m))).toBe(true);
    return received.find((m) => 'id' in m && m.id === id && !('method' in m))!;
  };
  /** A tools/call answered; its answer. */
  const call = async (id: number, name: string, args: Record<string, unknown> = {}): Promise<string> => {
    await send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
    return JSON.stringify(await answerTo(id));
  };
  /** Whatever the server sent before reaches the client before the answer to this ping, had it passed (InOrder). */
  const settle = async (id: number): Promise<JSONRPCMessage> => {
    await send({ jsonrpc: '2.0', id, method: 'ping' });
    return answerTo(id);
  };
  return { send, answerTo, call, settle, received, seenByServer, reports, close };
}

/** A relay whose server answers each tool named in `answers` with its result (the output-check attack passes); closed by `closers`. */
export async function answeringRelay(agent: string, answers: Record<string, Record<string, unknown>>, records: ControlRecord[], closers: Array<() => Promise<void>>) {
  const relay = await scriptedRelay(agent, (request, reply) => {
    const name = (request.params as { name?: string }).name ?? '';
    reply({ jsonrpc: '2.0', id: request.id, result: answers[name] ?? {} });
  }, records, { tools: Object.keys(answers).map((name) => ({ name, inputSchema: { type: 'object' } })) });
  closers.push(relay.close);
  return relay;
}

/** A resource read's result holding `blob` (base64), with its mime type when given. */
export const blobResource = (blob: string, mimeType?: string) => ({ content: [{ type: 'resource', resource: { uri: 'file:///customers.csv', ...(mimeType !== undefined && { mimeType }), blob } }] });
