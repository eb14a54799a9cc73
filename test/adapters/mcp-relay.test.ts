/**
 * The gateway's relay between a real MCP client and a real MCP server (both from
 * @modelcontextprotocol/sdk, over its in-memory transports): the server sees request ids
 * of the relay's own, a cancellation reaches the server under the id it knows, and a
 * tool added later (tools/list_changed) can be called once the server announces it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { McpRelay } from '../../src/adapters/mcp-relay.js';
import { ControlDataSchema, type ControlRecord } from '../../src/model/index.js';
import { GuardAgent } from '../../src/sdk/index.js';
import { quietLogger } from './guarded-agent.js';

const blockDrop: ControlRecord = {
  control_id: 1, name: 'block-drop', enabled: true, managed_by: null, source: null, created_at: '', updated_at: '',
  data: ControlDataSchema.parse({
    execution: 'sdk',
    scope: { step_types: ['tool'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)drop' } },
    action: { decision: 'deny' },
  }),
};

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function setup(options: { maxPending?: number } = {}) {
  const server = new McpServer({ name: 'in-memory', version: '1.0.0' });
  const aborted: string[] = [];
  server.registerTool('wait', { description: 'waits until cancelled' }, (extra) => new Promise((resolve) => {
    extra.signal.addEventListener('abort', () => {
      aborted.push(String(extra.requestId));
      resolve({ content: [{ type: 'text', text: 'aborted' }] });
    });
  }));
  server.registerTool('run_sql', { inputSchema: { query: z.string() } }, ({ query }) => ({ content: [{ type: 'text', text: `ran ${query}` }] }));

  const [clientSide, relayClientSide] = InMemoryTransport.createLinkedPair();
  const [relayServerSide, serverSide] = InMemoryTransport.createLinkedPair();
  const seenByServer: JSONRPCMessage[] = [];
  const guard = new GuardAgent({ agentName: 'relay-test', serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, [blockDrop]);
  const reports: string[] = [];
  const relay = new McpRelay({ guard, client: relayClientSide, server: relayServerSide, serverName: 'in-memory', serverNameFixed: false, requestTimeoutMs: 0, report: (l) => reports.push(l), ...options });
  relayClientSide.onmessage = (m) => relay.fromClient(m);
  relayServerSide.onmessage = (m) => relay.fromServer(m);
  await relayClientSide.start();
  await relayServerSide.start();
  await server.connect(serverSide);
  const deliver = serverSide.onmessage!;
  serverSide.onmessage = (m, extra) => {
    seenByServer.push(m);
    deliver(m, extra);
  };
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  closers.push(async () => {
    relay.close();
    await client.close();
    await server.close();
    await guard.shutdown();
  });
  return { client, server, relay, seenByServer, aborted, reports };
}

describe('McpRelay', () => {
  it('forwards requests under ids of its own and answers under the client\'s', async () => {
    const { client, seenByServer } = await setup();
    const answer = await client.request({ method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'select 1' } } }, CallToolResultSchema);
    expect(answer.content).toEqual([{ type: 'text', text: 'ran select 1' }]);
    const calls = seenByServer.filter((m) => 'method' in m && m.method === 'tools/call');
    expect(calls).toHaveLength(1);
    // The relay's own tools/list came first; every id the server saw is one of the relay's.
    const ids = seenByServer.filter((m) => 'id' in m).map((m) => (m as { id: unknown }).id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => typeof id === 'number')).toBe(true);
  });

  it('passes a cancellation on under the id the server knows', async () => {
    const { client, aborted, relay, seenByServer } = await setup();
    const controller = new AbortController();
    const call = client.request({ method: 'tools/call', params: { name: 'wait', arguments: {} } }, CallToolResultSchema, { signal: controller.signal });
    // The call has passed its pre check and reached the server.
    await expect.poll(() => seenByServer.some((m) => 'method' in m && m.method === 'tools/call')).toBe(true);
    controller.abort('changed my mind');
    await expect(call).rejects.toThrow();
    await expect.poll(() => aborted.length).toBe(1);
    expect(relay.pendingCount).toBe(0);
  });

  it('reads the tools again after tools/list_changed: a tool added later can be called', async () => {
    const { client, server } = await setup();
    await client.request({ method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'select 1' } } }, CallToolResultSchema);
    const before = await client.request({ method: 'tools/call', params: { name: 'late', arguments: {} } }, CallToolResultSchema).catch((e: unknown) => e);
    expect(JSON.stringify(before)).toContain('not a tool the MCP server declared');
    // registerTool announces the change (notifications/tools/list_changed).
    server.registerTool('late', { description: 'added later' }, () => ({ content: [{ type: 'text', text: 'late' }] }));
    await expect.poll(async () => {
      const r = await client.request({ method: 'tools/call', params: { name: 'late', arguments: {} } }, CallToolResultSchema).catch((e: unknown) => e);
      return JSON.stringify(r);
    }).toContain('"text":"late"');
  });

  it('denies in the relay, before the server sees the call', async () => {
    const { client, seenByServer } = await setup();
    const answer = await client.request({ method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'DROP TABLE t' } } }, CallToolResultSchema);
    expect(answer.isError).toBe(true);
    expect(seenByServer.some((m) => 'method' in m && m.method === 'tools/call')).toBe(false);
  });

  it('answers a request past --max-pending in flight with an error, and takes requests again once answers come back', async () => {
    const { client, relay, reports, seenByServer } = await setup({ maxPending: 3 });
    const calls = seenByServer.length;
    const controllers = [0, 1, 2].map(() => new AbortController());
    const waiting = controllers.map((c) => client.request({ method: 'tools/call', params: { name: 'wait', arguments: {} } }, CallToolResultSchema, { signal: c.signal }).catch(() => 'cancelled'));
    await expect.poll(() => relay.pendingCount).toBe(3);
    // A ping is a request too: it is refused, and never reaches the server.
    await expect(client.ping()).rejects.toThrow(/too many requests in flight \(3\): wait for answers before sending more/);
    await expect(client.request({ method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'select 1' } } }, CallToolResultSchema)).rejects.toThrow(/too many requests in flight/);
    expect(seenByServer.slice(calls).filter((m) => 'method' in m && m.method !== 'tools/call' && m.method !== 'tools/list')).toEqual([]);
    expect(reports.filter((r) => r.includes('--max-pending'))).toHaveLength(1);
    controllers[0]!.abort('done waiting');
    await expect.poll(() => relay.pendingCount).toBe(2);
    const answer = await client.request({ method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'select 2' } } }, CallToolResultSchema);
    expect(answer.content).toEqual([{ type: 'text', text: 'ran select 2' }]);
    for (const c of controllers.slice(1)) c.abort('done waiting');
    await Promise.all(waiting);
  });
});
