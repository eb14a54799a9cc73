/**
 * The gateway's HTTP face (issue #39 item 1): the MCP SDK's own client over streamable
 * HTTP, a real MCP server process per session (test/fixtures/mcp/server.mjs), checks from
 * sdk controls. Bad input: no or a wrong credential (401), a foreign Origin or a rebound
 * Host (403), a client opening more sessions than the bound (the one idle longest closed).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ControlDataSchema } from '../../src/model/index.js';
import { fixture, root, startTestGateway, type TestGatewayOptions } from './mcp-http-gateway.js';

const TOKEN = 'test-token-0123456789abcdef';

const blockDrop = {
  control_id: 1, name: 'block-drop', enabled: true, managed_by: null, source: null, created_at: '', updated_at: '',
  data: ControlDataSchema.parse({
    execution: 'sdk', scope: { step_types: ['tool'], stages: ['pre'] }, selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)drop' } }, action: { decision: 'deny' },
  }),
};

// One MCP server over HTTP for the tests of the session bound: a session of the gateway is a
// session of it, where over stdio each would start a process (twelve in those two tests).
let httpUpstream: ChildProcess;
let httpUpstreamUrl: string;
beforeAll(async () => {
  httpUpstream = spawn(process.execPath, [fixture], { env: { ...process.env, MCP_FIXTURE_HTTP_PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    httpUpstream.stderr!.on('data', (chunk: Buffer) => {
      const m = /listening on (\d+)/.exec(chunk.toString());
      if (m) resolve(Number(m[1]));
    });
    httpUpstream.once('exit', () => reject(new Error('the HTTP fixture exited')));
  });
  httpUpstreamUrl = `http://127.0.0.1:${port}/mcp`;
});
afterAll(() => {
  httpUpstream.kill();
});

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close().catch(() => undefined);
});

const gateway = (options: Omit<TestGatewayOptions, 'agentName'> = {}) =>
  startTestGateway(cleanup, { agentName: 'http-face', controls: [blockDrop], auth: { token: TOKEN }, ...options });

async function connect(url: string, token: string | null = TOKEN) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: token === null ? {} : { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'http-test', version: '1.0.0' });
  await client.connect(transport);
  cleanup.push(() => client.close());
  return { client, transport };
}

const call = async (client: Client, query: string) =>
  (await client.callTool({ name: 'run_sql', arguments: { query } }, CallToolResultSchema)) as CallToolResult;
const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('');

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } } };
const post = (url: string, headers: Record<string, string>, body: unknown = initialize) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });

describe('guardctl mcp-proxy --listen', () => {
  it('serves several clients at once, each a session of its own with its own checks', { timeout: 30_000 }, async () => {
    const { gw, decisions } = await gateway();
    const [a, b] = await Promise.all([connect(gw.url), connect(gw.url)]);
    expect(a.transport.sessionId).toBeDefined();
    expect(a.transport.sessionId).not.toBe(b.transport.sessionId);
    expect(gw.sessionCount).toBe(2);
    const [ra, rb] = await Promise.all([call(a.client, 'select 1'), call(b.client, 'DROP TABLE orders')]);
    expect(textOf(ra)).toBe('3 rows for select 1');
    expect(rb.isError).toBe(true);
    expect(textOf(rb)).not.toContain('rows');
    // Each check names the session it belongs to.
    const pre = decisions.filter((d) => d.stage === 'pre');
    expect(pre.find((d) => JSON.stringify(d.step.input).includes('select 1'))?.sessionId).toBe(a.transport.sessionId);
    expect(pre.find((d) => JSON.stringify(d.step.input).includes('DROP'))?.sessionId).toBe(b.transport.sessionId);
  });

  it('passes resources, prompts and binary content through', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { client } = await connect(gw.url);
    expect((await client.readResource({ uri: 'db://schema' })).contents[0]).toMatchObject({ text: 'CREATE TABLE orders (id int)' });
    expect((await client.getPrompt({ name: 'summarise', arguments: { table: 'orders' } })).messages[0]!.content).toMatchObject({ text: 'Summarise orders' });
    const image = (await client.callTool({ name: 'image', arguments: {} }, CallToolResultSchema)) as CallToolResult;
    expect(image.content[0]).toMatchObject({ type: 'image', mimeType: 'image/png' });
  });

  it('relays the progress notifications of a call', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { client } = await connect(gw.url);
    const progress: number[] = [];
    const slow = (await client.callTool({ name: 'slow', arguments: { steps: 3 } }, CallToolResultSchema, { onprogress: (p) => progress.push(p.progress) })) as CallToolResult;
    expect(textOf(slow)).toBe('done in 3 steps');
    expect(progress).toEqual([1, 2, 3]);
  });

  it('relays elicitation and sampling of the reference everything server (stdio, a process per session)', { timeout: 30_000 }, async () => {
    const everything = join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
    const { gw } = await gateway({ upstream: { command: process.execPath, args: [everything, 'stdio'] }, auth: { none: true } });
    const client = new Client({ name: 'http-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} }, sampling: {} } });
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name: 'Ada', check: true, email: 'ada@example.com', integer: 5, number: 2, enums: 'value1', untitledSingleSelectEnum: 'value1', titledSingleSelectEnum: 'value1', untitledMultipleSelectEnum: ['value1'], titledMultipleSelectEnum: ['value1'], legacyTitledEnum: 'value1' } }));
    client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: 'sampled reply' }, model: 'test-model', stopReason: 'endTurn' }));
    await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
    cleanup.push(() => client.close());
    expect(textOf((await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }, CallToolResultSchema)) as CallToolResult)).toContain('Ada');
    expect(textOf((await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 10 } }, CallToolResultSchema)) as CallToolResult)).toContain('sampled reply');
  });

  it('answers 401 without a credential or with a wrong one, and starts nothing', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const attempts: Array<Record<string, string>> = [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: `Basic ${TOKEN}` }, { authorization: 'Bearer ' }, { 'x-api-key': 'nope' }];
    for (const headers of attempts) {
      const response = await post(gw.url, headers);
      expect(response.status, JSON.stringify(headers)).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
    expect(gw.sessionCount).toBe(0);
    await expect(connect(gw.url, 'wrong')).rejects.toThrow();
    expect((await post(gw.url, { 'x-api-key': TOKEN })).status).toBe(200);
  });

  it('checks keys with the given verifier (the guard server\'s keys)', { timeout: 30_000 }, async () => {
    const { gw } = await gateway({ auth: { verifyKey: (key) => Promise.resolve(key === 'guard-regular-key') } });
    expect((await post(gw.url, { authorization: 'Bearer other' })).status).toBe(401);
    const { client } = await connect(gw.url, 'guard-regular-key');
    expect(textOf(await call(client, 'select 2'))).toBe('3 rows for select 2');
  });

  it("a session answers only to the key that opened it: another valid key holding its id gets 404", { timeout: 30_000 }, async () => {
    const { gw } = await gateway({ auth: { verifyKey: (key) => Promise.resolve(key === 'key-of-alice' || key === 'key-of-mallory') } });
    const { client, transport } = await connect(gw.url, 'key-of-alice');
    const sid = transport.sessionId!;
    const list = { jsonrpc: '2.0', id: 7, method: 'tools/list' };
    const as = (key: string) =>
      fetch(gw.url, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'mcp-session-id': sid, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(list),
      });
    const stolen = await as('key-of-mallory');
    expect(stolen.status).toBe(404);
    expect(await stolen.text()).not.toContain('run_sql');
    // The same request with the opener's key is answered, and the session still works.
    expect((await as('key-of-alice')).status).toBe(200);
    expect(textOf(await call(client, 'select 2'))).toBe('3 rows for select 2');
  });

  it('answers 403 to a foreign Origin and to a Host that is not its own (DNS rebinding)', { timeout: 30_000 }, async () => {
    const { gw } = await gateway({ allowedOrigins: ['https://app.example.com'] });
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await post(gw.url, { ...auth, origin: 'https://evil.example' })).status).toBe(403);
    expect((await post(gw.url, { ...auth, origin: 'null' })).status).toBe(403);
    expect((await post(gw.url, { ...auth, origin: 'https://app.example.com' })).status).toBe(200);
    // fetch sets Host itself; a raw request carries the rebound name.
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(gw.url, { method: 'POST', headers: { ...auth, host: 'attacker.example:80', 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(JSON.stringify(initialize));
    });
    expect(status).toBe(403);
  });

  it('bounds the sessions: past the limit the one idle longest is closed, the others go on', { timeout: 60_000 }, async () => {
    const { gw } = await gateway({ maxSessions: 3, upstream: { url: httpUpstreamUrl } });
    const first = await connect(gw.url);
    const second = await connect(gw.url);
    const third = await connect(gw.url);
    await call(first.client, 'select 1');
    // second is now the one idle longest.
    const fourth = await connect(gw.url);
    expect(gw.sessionCount).toBe(3);
    await expect(call(second.client, 'select 1')).rejects.toThrow();
    for (const kept of [first, third, fourth]) expect(textOf(await call(kept.client, 'select 3'))).toBe('3 rows for select 3');
  });

  it('past the bound a key opening sessions in a loop closes its own, not the sessions of other keys', { timeout: 60_000 }, async () => {
    const keys = new Set(['key-of-alice', 'key-of-bob', 'key-of-mallory']);
    const { gw } = await gateway({ maxSessions: 4, upstream: { url: httpUpstreamUrl }, auth: { verifyKey: (key) => Promise.resolve(keys.has(key)) } });
    // Alice's and Bob's sessions are the oldest and idle.
    const alice = await connect(gw.url, 'key-of-alice');
    const bob = await connect(gw.url, 'key-of-bob');
    const mallory: Array<Awaited<ReturnType<typeof connect>>> = [];
    for (let i = 0; i < 6; i++) mallory.push(await connect(gw.url, 'key-of-mallory'));
    expect(gw.sessionCount).toBe(4);
    for (const kept of [alice, bob, mallory[4]!, mallory[5]!]) expect(textOf(await call(kept.client, 'select 1'))).toBe('3 rows for select 1');
    await expect(call(mallory[0]!.client, 'select 1')).rejects.toThrow();
  });

  it('refuses a request without a session unless it is initialize, and an unknown session with 404', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await post(gw.url, auth, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'DROP TABLE x' } } })).status).toBe(400);
    expect((await post(gw.url, { ...auth, 'mcp-session-id': 'made-up' }, { jsonrpc: '2.0', id: 2, method: 'tools/list' })).status).toBe(404);
    expect((await fetch(gw.url.replace('/mcp', '/other'), { method: 'POST', headers: auth })).status).toBe(404);
    // A body-less POST, as curl sends one.
    expect((await fetch(gw.url, { method: 'POST', headers: auth })).status).toBe(400);
    expect(gw.sessionCount).toBe(0);
  });

  it('survives a session whose MCP server crashes: its call gets an error, the session ends, the others go on', { timeout: 30_000 }, async () => {
    const { gw, reports } = await gateway();
    const [a, b] = await Promise.all([connect(gw.url), connect(gw.url)]);
    await expect(a.client.callTool({ name: 'crash', arguments: {} })).rejects.toThrow(/exited/);
    await expect.poll(() => gw.sessionCount).toBe(1);
    expect(reports.join('\n')).toContain('the MCP server exited');
    expect(textOf(await call(b.client, 'select 5'))).toBe('3 rows for select 5');
    const c = await connect(gw.url);
    expect(textOf(await call(c.client, 'select 6'))).toBe('3 rows for select 6');
  });

  it('bounds each session\'s requests in flight (--max-pending), not those of other sessions', { timeout: 30_000 }, async () => {
    const { gw } = await gateway({ maxPending: 1 });
    const [a, b] = await Promise.all([connect(gw.url), connect(gw.url)]);
    const hung = new AbortController();
    const waiting = a.client.callTool({ name: 'hang', arguments: {} }, CallToolResultSchema, { signal: hung.signal }).catch(() => 'cancelled');
    await expect.poll(async () => String(await call(a.client, 'select 1').catch((e: unknown) => e))).toMatch(/too many requests in flight \(1\)/);
    expect(textOf(await call(b.client, 'select 2'))).toBe('3 rows for select 2');
    hung.abort('done waiting');
    await waiting;
    await expect.poll(async () => textOf(await call(a.client, 'select 3'))).toBe('3 rows for select 3');
  });

  it('ends a session and its MCP server on DELETE', { timeout: 30_000 }, async () => {
    const { gw } = await gateway();
    const { client, transport } = await connect(gw.url);
    await call(client, 'select 1');
    await transport.terminateSession();
    await expect.poll(() => gw.sessionCount).toBe(0);
  });
});
