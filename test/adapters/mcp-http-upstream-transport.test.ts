/**
 * The gateway's own streamable-HTTP client transport (mcp-http-upstream.ts), driven
 * against the MCP SDK's server over real HTTP: answers as SSE and as JSON, the server's
 * own messages sent as soon as it is initialized, a session the server ended (404), a
 * message over the limit, cancellation and close. Multi-line SSE data and a notification
 * the server never accepts come from a plain HTTP server, as the SDK's never sends them.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolResultSchema, LATEST_PROTOCOL_VERSION, type CallToolResult, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { HttpUpstreamTransport, type HttpUpstreamOptions } from '../../src/adapters/mcp-http-upstream.js';
import { reportedError } from '../../src/adapters/mcp-http-request.js';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close().catch(() => undefined);
});

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: URL; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), server };
}

interface SdkServer {
  url: URL;
  sessions: Map<string, StreamableHTTPServerTransport>;
  /** Methods of the requests the server saw, and whether each one's connection closed before it was answered. */
  seen: { method: string; dropped: boolean }[];
  server: Server;
}

/** The SDK's MCP server over streamable HTTP, one session per client; `onInitialized` runs as soon as a session is initialized. */
async function sdkServer(options: { json?: boolean; onInitialized?: (server: McpServer) => void } = {}): Promise<SdkServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const seen: SdkServer['seen'] = [];
  let release!: () => void;
  const hang = new Promise<void>((resolve) => (release = resolve));
  const build = (): McpServer => {
    const server = new McpServer({ name: 'upstream', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    server.registerTool('echo', { inputSchema: { text: z.string() } }, ({ text }) => ({ content: [{ type: 'text', text }] }));
    server.registerTool('big', { inputSchema: { bytes: z.number() } }, ({ bytes }) => ({ content: [{ type: 'text', text: 'b'.repeat(bytes) }] }));
    server.registerTool('hang', {}, async () => {
      await hang;
      return { content: [{ type: 'text', text: 'late' }] };
    });
    server.server.oninitialized = () => options.onInitialized?.(server);
    return server;
  };
  const { url, server } = await listen((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body: unknown = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const method = (body as { method?: string } | undefined)?.method ?? req.method!;
      const record = { method, dropped: false };
      seen.push(record);
      res.once('close', () => (record.dropped = !res.writableFinished));
      const sid = req.headers['mcp-session-id'];
      let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
      if (!transport && typeof sid === 'string') return void res.writeHead(404).end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
      if (!transport) {
        const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), enableJsonResponse: options.json ?? false, onsessioninitialized: (id) => void sessions.set(id, created) });
        await build().connect(created);
        transport = created;
      }
      await transport.handleRequest(req, res, body);
    })();
  });
  cleanup.push(async () => release());
  return { url, sessions, seen, server };
}

function transportTo(url: URL, options: HttpUpstreamOptions = {}): HttpUpstreamTransport {
  const transport = new HttpUpstreamTransport(url, options);
  cleanup.push(() => transport.close());
  return transport;
}

async function clientOf(transport: HttpUpstreamTransport): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
const initialize: JSONRPCMessage = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } };

/** A transport whose messages, errors, oversize reports and close are recorded. */
function recorded(transport: HttpUpstreamTransport) {
  const got = { messages: [] as JSONRPCMessage[], errors: [] as Error[], oversize: 0, closed: 0 };
  transport.onmessage = (m) => got.messages.push(m);
  transport.onerror = (e) => got.errors.push(e);
  transport.onoversize = () => got.oversize++;
  transport.onclose = () => got.closed++;
  return got;
}

describe('HttpUpstreamTransport against the MCP SDK server', () => {
  it.each([['SSE', false], ['JSON', true]])('calls tools with answers as %s, under the session the server gave', async (_name, json) => {
    const upstream = await sdkServer({ json });
    const client = await clientOf(transportTo(upstream.url));
    for (let i = 0; i < 20; i++) {
      const result = (await client.callTool({ name: 'echo', arguments: { text: `hello ${i}` } }, CallToolResultSchema)) as CallToolResult;
      expect(textOf(result)).toBe(`hello ${i}`);
    }
    expect(upstream.sessions.size).toBe(1);
  });

  it('has the server\'s own stream open before notifications/initialized: what the server sends at once arrives, every time', async () => {
    const upstream = await sdkServer({ onInitialized: (server) => void server.server.sendToolListChanged() });
    for (let round = 0; round < 5; round++) {
      const transport = transportTo(upstream.url);
      const got = recorded(transport);
      await transport.start();
      await transport.send(initialize);
      await expect.poll(() => got.messages.length).toBe(1);
      await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      await expect.poll(() => got.messages.some((m) => 'method' in m && m.method === 'notifications/tools/list_changed'), { timeout: 5000 }).toBe(true);
      expect(upstream.seen.map((s) => s.method).slice(-2), `round ${round}`).toEqual(['GET', 'notifications/initialized']);
      await transport.close();
    }
  });

  it('closes when the server ended the session (404), and says so', async () => {
    const upstream = await sdkServer();
    const transport = transportTo(upstream.url);
    const client = await clientOf(transport);
    const closed = new Promise<void>((resolve) => (transport.onclose = resolve));
    for (const session of upstream.sessions.values()) await session.close();
    upstream.sessions.clear();
    await expect(client.callTool({ name: 'echo', arguments: { text: 'x' } })).rejects.toThrow(/ended the session \(HTTP 404/);
    await closed;
    await expect(transport.send({ jsonrpc: '2.0', id: 9, method: 'ping' })).rejects.toThrow('Not connected');
  });

  it.each([['SSE', false], ['JSON', true]])('skips an answer over the limit as %s and reports it; the next answer arrives', async (_name, json) => {
    const upstream = await sdkServer({ json });
    const transport = transportTo(upstream.url, { maxMessageBytes: 20_000 });
    const got = recorded(transport);
    await transport.send(initialize);
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'big', arguments: { bytes: 30_000 } } });
    await expect.poll(() => got.oversize).toBe(1);
    await transport.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'big', arguments: { bytes: 10_000 } } });
    await expect.poll(() => got.messages.filter((m) => 'id' in m).map((m) => (m as { id: number }).id)).toEqual([0, 2]);
    expect(got.errors).toEqual([]);
  });

  it('closes the POST of a request the relay cancelled; close sends DELETE, then leaves no request or socket open', async () => {
    const upstream = await sdkServer();
    const transport = transportTo(upstream.url);
    const got = recorded(transport);
    await transport.send(initialize);
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'hang', arguments: {} } });
    await transport.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hang', arguments: {} } });
    await transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'timed out' } });
    const calls = () => upstream.seen.filter((s) => s.method === 'tools/call');
    await expect.poll(() => calls()[0]!.dropped).toBe(true);
    expect(calls()[1]!.dropped).toBe(false);
    await transport.close();
    expect(upstream.seen.at(-1)!.method).toBe('DELETE');
    // Nothing of the transport's is left open: no request, no idle keep-alive socket.
    await expect.poll(() => new Promise((resolve) => upstream.server.getConnections((_e, count) => resolve(count)))).toBe(0);
    expect(got.closed).toBe(1);
    expect(got.errors).toEqual([]);
    await expect(transport.send({ jsonrpc: '2.0', id: 3, method: 'ping' })).rejects.toThrow('Not connected');
  });
});

describe('HttpUpstreamTransport against a plain HTTP server', () => {
  it('reads an answer whose data spans several lines, cut into small chunks, with the session and protocol headers sent back', async () => {
    const headers: IncomingMessage['headers'][] = [];
    const { url } = await listen((req, res) => {
      headers.push(req.headers);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'session-1' });
        const event = 'id: e1\nevent: message\ndata: {"jsonrpc":"2.0",\ndata:  "id": 1,\r\ndata: "result": {"text": "two\\nlines"}}\n\n';
        for (let at = 0; at < event.length; at += 7) res.write(event.slice(at, at + 7));
        res.end();
      });
    });
    const transport = transportTo(url, { headers: { authorization: 'Bearer t' } });
    const got = recorded(transport);
    transport.setProtocolVersion('2025-06-18');
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    await expect.poll(() => got.messages).toEqual([{ jsonrpc: '2.0', id: 1, result: { text: 'two\nlines' } }]);
    await transport.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(headers[1]).toMatchObject({ 'mcp-session-id': 'session-1', 'mcp-protocol-version': '2025-06-18', authorization: 'Bearer t', accept: 'application/json, text/event-stream' });
  });

  it('resumes a request\'s stream that ended before its answer with a GET from its last event id, after the server\'s retry delay', async () => {
    const gets: (string | undefined)[] = [];
    const { url } = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (req.method === 'POST') return void res.end('retry: 10\nid: stream-1\ndata:\n\n');
        gets.push(req.headers['last-event-id'] as string | undefined);
        res.end('id: stream-2\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n');
      });
    });
    const transport = transportTo(url);
    const got = recorded(transport);
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } });
    await expect.poll(() => got.messages).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
    // Answered: the resumed stream's end resumes nothing more.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(gets).toEqual(['stream-1']);
  });

  it("reports a failed resumption of a request's stream without the server's reason phrase, which can quote what a tool read", async () => {
    const key = 'AKIAIOSFODNN7EXAMPLE';
    const { url } = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.method === 'POST') return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end('retry: 10\nid: stream-1\ndata:\n\n');
        res.writeHead(500, `read ${key}`).end();
      });
    });
    const transport = transportTo(url);
    const got = recorded(transport);
    await transport.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } });
    await expect.poll(() => got.errors.length).toBeGreaterThan(0);
    expect(reportedError(got.errors[0])).toContain('HTTP 500');
    expect(got.errors.map(reportedError).join('\n')).not.toContain(key);
  });

  it('resumes the stream of a server that closes each at once with retry: 0 no more than ten times a second, and waits at most 30 s when asked for longer', async () => {
    let gets = 0;
    const retry = { ms: 0 };
    const { url } = await listen((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (req.method === 'GET') gets++;
        res.end(`retry: ${retry.ms}\nid: e${gets}\ndata:\n\n`);
      });
    });
    const transport = transportTo(url);
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await expect.poll(() => gets).toBeGreaterThan(0);
    const from = gets;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // 100 ms apart at least: 10 in a second (a tight loop made hundreds).
    expect(gets - from).toBeLessThanOrEqual(11);
    expect(gets - from).toBeGreaterThanOrEqual(3);
    retry.ms = 2 ** 31 + 1000;
    const asked = gets;
    await expect.poll(() => gets).toBeGreaterThan(asked);
    await new Promise((resolve) => setTimeout(resolve, 500));
    // A delay past what a timer holds (it fired after 1 ms) waits the longest allowed instead.
    expect(gets).toBe(asked + 1);
    await transport.close();
  });

  it('fails a notification the server does not accept in time, and sends what came after it', async () => {
    const methods: string[] = [];
    const { url } = await listen((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const method = (JSON.parse(Buffer.concat(chunks).toString()) as { method: string }).method;
        methods.push(method);
        if (method !== 'notifications/stuck') res.writeHead(202).end();
      });
    });
    const transport = transportTo(url, { acceptTimeoutMs: 200 });
    const stuck = transport.send({ jsonrpc: '2.0', method: 'notifications/stuck' });
    const next = transport.send({ jsonrpc: '2.0', method: 'notifications/next' });
    await expect(stuck).rejects.toThrow(/did not answer the POST within 0.2s/);
    await next;
    expect(methods).toEqual(['notifications/stuck', 'notifications/next']);
  });

  it('sends again a message whose reused keep-alive socket the server had closed', async () => {
    const served = new WeakMap<object, number>();
    const methods: string[] = [];
    const { url } = await listen((req, res) => {
      const count = (served.get(req.socket) ?? 0) + 1;
      served.set(req.socket, count);
      // The server drops each connection at its second request, as one closing idle sockets would.
      if (count === 2) return void req.socket.destroy();
      req.resume();
      req.on('end', () => {
        methods.push(req.method!);
        res.writeHead(202).end();
      });
    });
    const transport = transportTo(url);
    for (let i = 0; i < 4; i++) await transport.send({ jsonrpc: '2.0', method: 'notifications/message', params: { i } });
    expect(methods).toHaveLength(4);
  });

  it('surfaces an HTTP error with its status and the server\'s text, and stays open', async () => {
    const { url } = await listen((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(500).end('upstream exploded'));
    });
    const transport = transportTo(url);
    const got = recorded(transport);
    await expect(transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' })).rejects.toThrow('HTTP 500 upstream exploded');
    expect(got.closed).toBe(0);
  });

  it('the HTTP upstream sends 3,000 messages without a MaxListenersExceededWarning', { timeout: 60_000 }, async () => {
    // Accepts every message (202), as a server does a notification.
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(202).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const warnings: Error[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning);
    process.on('warning', onWarning);
    const transport = new HttpUpstreamTransport(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), {});
    try {
      await transport.start();
      for (let i = 0; i < 3000; i++) await transport.send({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: i } });
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await transport.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
