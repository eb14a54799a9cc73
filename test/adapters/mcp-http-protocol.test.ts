/**
 * The HTTP face's streamable-HTTP rules (MCP spec revision 2025-11-25, "Transports"), each
 * driven with a plain HTTP client (fetch) and, where a client can see it, the MCP SDK's
 * own: Accept and Content-Type (406, 415), Mcp-Session-Id (issued on initialize; 400
 * without, 404 unknown or ended), MCP-Protocol-Version (400 unsupported), DELETE, the GET
 * stream carrying the server's notifications, JSON answers and SSE streams, batches only
 * for protocol versions that had them, and bad bodies (400 parse error, 413).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, LoggingMessageNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestGateway } from './mcp-http-gateway.js';
import { readUntil } from './sse-read.js';

const BOTH = 'application/json, text/event-stream';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close().catch(() => undefined);
});

const gateway = () => startTestGateway(cleanup, { agentName: 'http-protocol' });

const initialize = (protocolVersion: string) => ({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'fetch', version: '1' } } });
const callTool = (id: number | string, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) => ({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta && { _meta: meta }) },
});

function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: BOTH, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** A session opened over plain HTTP: initialize (answered as JSON), then notifications/initialized (202). */
async function session(url: string, protocolVersion = '2025-11-25'): Promise<{ sid: string; send: (body: unknown, headers?: Record<string, string>) => Promise<Response> }> {
  const init = await post(url, initialize(protocolVersion));
  expect(init.status).toBe(200);
  expect(init.headers.get('content-type')).toBe('application/json');
  expect(((await init.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe(protocolVersion);
  const sid = init.headers.get('mcp-session-id')!;
  // Visible ASCII only (the spec), and unguessable.
  expect(sid).toMatch(/^[\x21-\x7e]{32,}$/);
  const send = (body: unknown, headers: Record<string, string> = {}) => post(url, body, { 'mcp-session-id': sid, 'mcp-protocol-version': protocolVersion, ...headers });
  expect((await send({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
  return { sid, send };
}

/** The JSON-RPC messages of an SSE body (a priming event, an id without data, carries none). */
function events(text: string): Array<Record<string, unknown>> {
  return text.split('\n\n').filter((e) => /^data: ./m.test(e)).map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as Record<string, unknown>);
}

const errorOf = async (response: Response) => ((await response.json()) as { error: { code: number; message: string }; id: null }).error;

describe('the HTTP face speaks streamable HTTP as the spec says', () => {
  it('refuses a POST that does not accept both JSON and SSE (406) or is not JSON (415), and starts no session', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    for (const accept of ['application/json', 'text/event-stream', '*/*', 'application/json, text/event-stream;q=0']) {
      const response = await post(gw.url, initialize('2025-11-25'), { accept });
      expect(response.status, accept).toBe(406);
      expect((await errorOf(response)).message).toContain('Accept');
    }
    expect((await post(gw.url, initialize('2025-11-25'), { 'content-type': 'text/plain' })).status).toBe(415);
    expect(gw.sessionCount).toBe(0);
    const { send } = await session(gw.url);
    expect((await send(callTool(1, 'run_sql', { query: 'select 1' }), { accept: 'application/json' })).status).toBe(406);
  });

  it('issues an Mcp-Session-Id on initialize and requires it after: 400 without, 404 unknown or ended (DELETE)', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { sid, send } = await session(gw.url);
    expect(gw.sessionCount).toBe(1);
    expect((await post(gw.url, callTool(1, 'run_sql', { query: 'select 1' }))).status).toBe(400);
    expect((await post(gw.url, callTool(1, 'run_sql', { query: 'select 1' }), { 'mcp-session-id': `${sid}x` })).status).toBe(404);
    expect((await fetch(gw.url, { headers: { accept: 'text/event-stream' } })).status).toBe(400);
    // A second initialize within the session is refused; one without a session starts another.
    expect((await send(initialize('2025-11-25'))).status).toBe(400);
    const ended = await fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': sid } });
    expect(ended.status).toBe(200);
    expect(gw.sessionCount).toBe(0);
    expect((await send(callTool(2, 'run_sql', { query: 'select 1' }))).status).toBe(404);
    expect((await fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': sid } })).status).toBe(404);
    expect((await fetch(gw.url, { method: 'PUT', headers: { 'mcp-session-id': sid } })).status).toBe(405);
  });

  it('answers 400 to an MCP-Protocol-Version it does not support, and takes the negotiated one when none is sent', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { sid, send } = await session(gw.url, '2025-06-18');
    const refused = await send(callTool(1, 'run_sql', { query: 'select 1' }), { 'mcp-protocol-version': '1999-01-01' });
    expect(refused.status).toBe(400);
    expect((await errorOf(refused)).message).toContain('"1999-01-01"');
    const noHeader = await post(gw.url, callTool(2, 'run_sql', { query: 'select 2' }), { 'mcp-session-id': sid });
    expect(await noHeader.json()).toMatchObject({ id: 2, result: { content: [{ text: '3 rows for select 2' }] } });
  });

  it('answers a request as JSON, or as an SSE stream when the client prefers it or the server sends first', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { send } = await session(gw.url);
    const json = await send(callTool(1, 'run_sql', { query: 'select 1' }));
    expect(json.headers.get('content-type')).toBe('application/json');
    expect(await json.json()).toMatchObject({ id: 1, result: { content: [{ text: '3 rows for select 1' }] } });

    const preferred = await send(callTool(2, 'run_sql', { query: 'select 2' }), { accept: 'text/event-stream, application/json' });
    expect(preferred.headers.get('content-type')).toBe('text/event-stream');
    expect(events(await preferred.text())).toMatchObject([{ id: 2, result: { content: [{ text: '3 rows for select 2' }] } }]);

    // Progress for the call's token comes first, on the call's own stream, then the answer ends it.
    const progressed = await send(callTool(3, 'slow', { steps: 2 }, { progressToken: 'p3' }));
    expect(progressed.headers.get('content-type')).toBe('text/event-stream');
    const messages = events(await progressed.text());
    expect(messages.map((m) => m.method ?? m.id)).toEqual(['notifications/progress', 'notifications/progress', 3]);
    expect(messages[0]).toMatchObject({ params: { progressToken: 'p3', progress: 1 } });
  });

  it('sends notifications that belong to no request on the GET stream, or on a waiting call\'s stream when none is open', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { sid, send } = await session(gw.url);
    expect((await fetch(gw.url, { headers: { 'mcp-session-id': sid, accept: 'application/json' } })).status).toBe(406);
    // No GET stream yet: the log line comes on the call's own response, made an SSE stream.
    const alone = await send(callTool(1, 'leak', { how: 'clean_log' }));
    expect(alone.headers.get('content-type')).toBe('text/event-stream');
    expect(events(await alone.text()).map((m) => m.method ?? m.id)).toEqual(['notifications/message', 1]);

    const stream = await fetch(gw.url, { headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25', accept: 'text/event-stream' } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    expect(stream.headers.get('mcp-session-id')).toBe(sid);
    // One standalone stream per session.
    expect((await fetch(gw.url, { headers: { 'mcp-session-id': sid, accept: 'text/event-stream' } })).status).toBe(409);
    const logged = readUntil(stream, events, (m) => m.method === 'notifications/message');
    const answer = await send(callTool(2, 'leak', { how: 'clean_log' }));
    expect(answer.headers.get('content-type')).toBe('application/json');
    expect(await answer.json()).toMatchObject({ id: 2, result: { content: [{ text: 'done' }] } });
    expect(await logged).toMatchObject([{ method: 'notifications/message', params: { data: 'nothing secret' } }]);
  });

  it('takes batches only in a session whose protocol version had them (2025-03-26), answered in order', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const current = await session(gw.url, '2025-06-18');
    const refused = await current.send([callTool(1, 'run_sql', { query: 'select 1' })]);
    expect(refused.status).toBe(400);
    expect((await errorOf(refused)).message).toMatch(/batches are not part of MCP 2025-06-18/);

    const old = await session(gw.url, '2025-03-26');
    const batch = await old.send([callTool('b', 'run_sql', { query: 'select 2' }), { jsonrpc: '2.0', method: 'notifications/roots/list_changed' }, callTool('a', 'run_sql', { query: 'select 1' })]);
    expect(batch.status).toBe(200);
    expect(((await batch.json()) as Array<{ id: string }>).map((m) => m.id)).toEqual(['b', 'a']);
    expect((await old.send([])).status).toBe(400);
    // initialize is never batched.
    expect((await post(gw.url, [initialize('2025-03-26')])).status).toBe(400);
  });

  it('refuses bodies it cannot read: not JSON (400, parse error), not JSON-RPC, too large (413), an id already waiting', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { send } = await session(gw.url);
    const garbled = await send('{"jsonrpc": "2.0", "id": 1,');
    expect(garbled.status).toBe(400);
    expect((await errorOf(garbled)).code).toBe(-32700);
    const notRpc = await send({ jsonrpc: '2.0', id: 1, params: {} });
    expect(notRpc.status).toBe(400);
    expect((await errorOf(notRpc)).code).toBe(-32600);
    const large = await send(callTool(1, 'run_sql', { query: 'x'.repeat(4 * 1024 * 1024) }));
    expect(large.status).toBe(413);
    expect((await errorOf(large)).message).toBe(`a message larger than ${4 * 1024 * 1024} bytes is not read`);
    expect((await post(gw.url, { ...initialize('2025-11-25'), pad: 'x'.repeat(1024 * 1024) })).status).toBe(413);
    // Two requests under one id at once: the second is refused, the first still gets its answer.
    const first = send(callTool(7, 'slow', { steps: 1 }));
    await new Promise((r) => setTimeout(r, 50));
    const second = await send(callTool(7, 'run_sql', { query: 'select 7' }));
    expect(second.status).toBe(400);
    expect((await errorOf(second)).message).toContain('already waiting');
    expect(await (await first).json()).toMatchObject({ id: 7, result: { content: [{ text: 'done in 1 steps' }] } });
  });
});

describe('the HTTP face with the MCP SDK\'s own client', () => {
  async function connect(url: string): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client({ name: 'sdk', version: '1.0.0' });
    await client.connect(transport);
    cleanup.push(() => client.close());
    return { client, transport };
  }

  it('gets answers, progress and unrelated notifications, and 404 with its session ended (DELETE)', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { client, transport } = await connect(gw.url);
    const logs: string[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(String(n.params.data)));
    const progress: number[] = [];
    const slow = (await client.callTool({ name: 'slow', arguments: { steps: 2 } }, CallToolResultSchema, { onprogress: (p) => progress.push(p.progress) })) as CallToolResult;
    expect(slow.content).toEqual([{ type: 'text', text: 'done in 2 steps' }]);
    expect(progress).toEqual([1, 2]);
    await client.callTool({ name: 'leak', arguments: { how: 'clean_log' } });
    await expect.poll(() => logs).toEqual(['nothing secret']);
    const ended = transport.sessionId!;
    await transport.terminateSession();
    expect(gw.sessionCount).toBe(0);
    // A client that still holds the ended session's id (reconnecting with it) is told it is gone.
    const stale = new Client({ name: 'sdk', version: '1.0.0' });
    await stale.connect(new StreamableHTTPClientTransport(new URL(gw.url), { sessionId: ended }));
    cleanup.push(() => stale.close());
    await expect(stale.callTool({ name: 'run_sql', arguments: { query: 'select 1' } })).rejects.toThrow(/no such session/);
  });

  it('refuses an SDK client that asks for a protocol version the server does not support', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { client, transport } = await connect(gw.url);
    transport.setProtocolVersion('1999-01-01');
    await expect(client.listTools()).rejects.toThrow(/400|unsupported MCP-Protocol-Version/);
  });
});
