/**
 * Sessions the adapters derive (issue #37, ninth pass). The MCP gateway's stdio face: one
 * proxy serves one client, so its steps are one session, as the HTTP face's steps of one
 * MCP session are. The AI SDK: calls that begin with the same message object are still
 * calls of their own.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { McpRelay } from '../../src/adapters/mcp-relay.js';
import { init } from '../../src/sdk/index.js';
import { addControl, startRealServer } from '../sdk/real-server.js';
import { chatBotOn } from './chat-bot.js';
import { quietLogger } from './guarded-agent.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A relay as `guardctl mcp-proxy -- command` runs it (no session id given), with its own client. */
async function stdioClient(serverUrl: string, sent: Array<string | undefined>) {
  const recording: typeof fetch = async (input, initArgs) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (url.endsWith('/api/v1/evaluation') && typeof initArgs?.body === 'string') sent.push((JSON.parse(initArgs.body) as { session_id?: string }).session_id);
    return fetch(input, initArgs);
  };
  const guard = await init({ agentName: 'mcp-bot', serverUrl, refreshIntervalSeconds: 0, logger: quietLogger, fetch: recording, events: false, tracer: false });
  const server = new McpServer({ name: 'in-memory', version: '1.0.0' });
  server.registerTool('fetch_url', {}, () => ({ content: [{ type: 'text', text: 'a page' }] }));
  server.registerTool('send_email', {}, () => ({ content: [{ type: 'text', text: 'sent' }] }));
  const [clientSide, relayClientSide] = InMemoryTransport.createLinkedPair();
  const [relayServerSide, serverSide] = InMemoryTransport.createLinkedPair();
  const relay = new McpRelay({ guard, client: relayClientSide, server: relayServerSide, serverName: 'in-memory', serverNameFixed: false, requestTimeoutMs: 0, report: () => undefined });
  relayClientSide.onmessage = (m) => relay.fromClient(m);
  relayServerSide.onmessage = (m) => relay.fromServer(m);
  await relayClientSide.start();
  await relayServerSide.start();
  await server.connect(serverSide);
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  closers.push(async () => {
    relay.close();
    await client.close();
    await server.close();
    await guard.shutdown();
  });
  return client;
}

describe('MCP gateway, stdio face', () => {
  it('sends every step of one client in one session, and another client in another', async () => {
    const real = await startRealServer();
    closers.push(real.close);
    await real.client.initAgent({ agent_name: 'mcp-bot' });
    await addControl(real.client, 'mcp-bot', 'mark-untrusted', {
      scope: { step_types: ['tool'], step_names: ['fetch_url'], stages: ['post'] },
      selector: { path: 'name' },
      evaluator: { name: 'regex', config: { pattern: '.' } },
      action: { decision: 'log', session_labels: ['untrusted_content'] },
    });
    await addControl(real.client, 'mcp-bot', 'deny-after-untrusted', {
      scope: { step_types: ['tool'], step_names: ['send_email'], stages: ['pre'], session_labels: ['untrusted_content'] },
      selector: { path: 'name' },
      evaluator: { name: 'regex', config: { pattern: '.' } },
      action: { decision: 'deny', message: 'untrusted content in this session' },
    });
    const sent: Array<string | undefined> = [];
    const first = await stdioClient(real.url, sent);
    await first.callTool({ name: 'fetch_url', arguments: {} }, CallToolResultSchema);
    const denied = await first.callTool({ name: 'send_email', arguments: {} }, CallToolResultSchema).catch((e: unknown) => e);
    expect(JSON.stringify(denied)).toMatch(/Blocked/);
    const sessions = new Set(sent);
    expect(sessions.size).toBe(1);
    expect([...sessions][0]).toMatch(/^mcp:/);
    // Another client of another proxy: a session of its own, without the first one's label.
    const other: Array<string | undefined> = [];
    const second = await stdioClient(real.url, other);
    const sentMail = await second.callTool({ name: 'send_email', arguments: {} }, CallToolResultSchema);
    expect(JSON.stringify(sentMail)).toMatch(/sent/);
    expect(other.every((id) => id !== undefined && !sessions.has(id))).toBe(true);
  });
});

describe('AI SDK: the session of a generateText call', () => {
  it('gives two calls that begin with the same message object (a system prompt in a constant) two sessions', async () => {
    const { sessionsOf } = await chatBotOn(closers);
    const SYSTEM = { role: 'system' as const, content: 'You help customers.' };
    const first = (await sessionsOf([SYSTEM, { role: 'user', content: 'first customer' }])).sessions;
    const second = (await sessionsOf([SYSTEM, { role: 'user', content: 'second customer' }])).sessions;
    // Each call's four checks (two tool calls, pre and post) in one session, its own.
    expect([first.length, second.length]).toEqual([1, 1]);
    expect(second[0]).not.toBe(first[0]);
  });
});
