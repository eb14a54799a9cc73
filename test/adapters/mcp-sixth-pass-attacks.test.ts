/**
 * The sixth attack pass on the MCP gateway (issue #39): the relay between a raw JSON-RPC
 * client and a scripted server over the MCP SDK's in-memory transports, as in the fifth;
 * the plugin evaluators' cases run their controls on a real server that holds the plugins.
 */
import { request, type IncomingMessage } from 'node:http';
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import type { EvaluatorDefinition, StepContext } from '../../src/evaluators/types.js';
import type { ControlDataInput, ControlRecord } from '../../src/model/index.js';
import { init } from '../../src/sdk/index.js';
import { addControl } from '../sdk/real-server.js';
import { startTestServer } from '../support/server.js';
import { CARD, denyCardOutput, quietLogger, sdkControl } from './guarded-agent.js';
import { startTestGateway } from './mcp-http-gateway.js';
import { scriptedRelay, type Script, type ScriptedRelayOptions } from './scripted-relay.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(script: Script, records: ControlRecord[], options: ScriptedRelayOptions = {}) {
  const relay = await scriptedRelay('sixth-pass', script, records, options);
  closers.push(relay.close);
  return relay;
}

const answerNotes = (request: JSONRPCRequest, reply: (message: JSONRPCMessage) => void): void => {
  if (request.method === 'tools/call') reply({ jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: 'notes' }] } });
  else reply({ jsonrpc: '2.0', id: request.id, result: {} });
};

const VERSION = '2025-11-25';

/** A session of the HTTP face opened over plain HTTP (initialize, then notifications/initialized); `post` sends a message of it. */
async function httpSession(url: string) {
  const send = (body: unknown, sid?: string) => fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(sid && { 'mcp-session-id': sid, 'mcp-protocol-version': VERSION }) },
    body: JSON.stringify(body),
  });
  const init = await send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'attacker', version: '1' } } });
  expect(init.status).toBe(200);
  const sid = init.headers.get('mcp-session-id')!;
  await init.text();
  expect((await send({ jsonrpc: '2.0', method: 'notifications/initialized' }, sid)).status).toBe(202);
  return { sid, post: (body: unknown) => send(body, sid) };
}

const log = (data: string): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data } });

/**
 * A plugin counting the outputs it is asked about per session, and with `byAccount` per
 * `input.account` of the step too (StepContext, which every check gets): it matches past `max` of them.
 */
function outputCounter(name: string, byAccount: boolean): EvaluatorDefinition {
  const counts = new Map<string, number>();
  return {
    name,
    description: 'matches past max outputs per session and account',
    configSchema: { type: 'object', properties: { max: { type: 'integer' } }, required: ['max'], additionalProperties: false },
    stateful: 'counts outputs across steps',
    perSession: true,
    compile(config) {
      const max = config.max as number;
      return (_value: unknown, _memo?: unknown, step?: StepContext) => {
        const account = byAccount ? (step?.step.input as { account?: unknown } | null | undefined)?.account : '';
        // A step naming no account is not one this plugin counts.
        if (typeof account !== 'string') return { matched: false, confidence: 1 };
        const key = `${step?.sessionId ?? ''}\u0000${account}`;
        const count = (counts.get(key) ?? 0) + 1;
        counts.set(key, count);
        return { matched: count > max, confidence: 1 };
      };
    },
  };
}

/** `read_secret`'s outputs, counted by `evaluator` (a plugin): at most `max` of them an account. */
const countSecretOutputs = (evaluator: string, max: number): ControlDataInput => ({
  execution: 'server',
  scope: { step_types: ['tool'], step_names: ['read_secret'], stages: ['post'] },
  selector: { path: 'output' },
  evaluator: { name: evaluator, config: { max } },
  action: { decision: 'deny', message: 'Too many secrets read.' },
});

/** A real server holding `plugins` and `control`, and an agent of it whose own registry holds `known`. */
async function guardWithPlugins(plugins: EvaluatorDefinition[], known: EvaluatorDefinition[], control: ControlDataInput) {
  const server = await startTestServer({ evaluators: plugins, listen: true });
  closers.push(server.close);
  await server.client!.initAgent({ agent_name: 'sixth-pass' });
  await addControl(server.client!, 'sixth-pass', 'count-secret-outputs', control);
  const guard = await init({
    agentName: 'sixth-pass', serverUrl: server.url, refreshIntervalSeconds: 0, events: false, logger: quietLogger, tracer: false,
    registry: createDefaultRegistry({ extra: known }), disclosure: 'name',
  });
  closers.push(() => guard.shutdown());
  return guard;
}

describe('plugin evaluators that count, and the later messages of the server', () => {
  it("a counting plugin the gateway knows counts the outputs of its tool only: other tools' answers neither use up its count nor are withheld", async () => {
    const plugin = outputCounter('secret_outputs', false);
    const guard = await guardWithPlugins([plugin], [plugin], countSecretOutputs('secret_outputs', 2));
    const { call } = await setup(answerNotes, [], { guard });
    expect(await call(1, 'read_secret', { account: 'a' })).toContain('"notes"');
    for (let id = 2; id <= 5; id++) expect(await call(id, 'read_file', { path: `notes-${id}` })).toContain('"notes"');
    // The second output of read_secret: within its count of 2.
    expect(await call(6, 'read_secret', { account: 'a' })).toContain('"notes"');
    expect(await call(7, 'read_secret', { account: 'a' })).toContain('count-secret-outputs');
  });

  it('a plugin of the server the gateway does not know is checked on the step as it was sent (its input too), never on a made-up one without it', async () => {
    const plugin = outputCounter('server_secret_outputs', true);
    const guard = await guardWithPlugins([plugin], [], countSecretOutputs('server_secret_outputs', 1));
    let fromServer!: (message: JSONRPCMessage) => void;
    const { call, settle, received } = await setup((request, reply) => {
      fromServer = reply;
      answerNotes(request, reply);
    }, [], { guard });
    expect(await call(1, 'read_secret', { account: 'a' })).toContain('"notes"');
    // After the answer the server sends what read_secret read again: a second output of account a's, past its count of 1.
    fromServer(log('the ledger of account a'));
    // The ping's answer is such an output too (withheld as well): it only marks that the log line went before it.
    await settle(2);
    expect(JSON.stringify(received)).not.toContain('the ledger');
  });
});

describe('a counting plugin of the guard server, which the gateway learns of (GET /evaluators)', () => {
  it("counts the outputs of its tool only: other tools' answers pass and do not use up its count", { timeout: 30_000 }, async () => {
    const plugin = outputCounter('run_sql_outputs', false);
    const guard = await guardWithPlugins([plugin], [], {
      execution: 'server',
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['post'] },
      selector: { path: 'output' },
      evaluator: { name: 'run_sql_outputs', config: { max: 2 } },
      action: { decision: 'deny', message: 'Too many queries answered.' },
    });
    const { gw } = await startTestGateway(closers, { agentName: 'sixth-pass', guard });
    const s = await httpSession(gw.url);
    const call = async (id: number, name: string, args: Record<string, unknown>) =>
      JSON.stringify(await (await s.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })).json());
    expect(await call(1, 'run_sql', { query: 'select 1' })).not.toContain('isError');
    for (let id = 2; id <= 4; id++) expect(await call(id, 'env', { name: 'PATH' })).not.toContain('isError');
    // Its second output: within its count of 2; the third is past it.
    expect(await call(5, 'run_sql', { query: 'select 2' })).not.toContain('isError');
    expect(await call(6, 'run_sql', { query: 'select 3' })).toContain('count-secret-outputs');
  });

  it('a plugin of the server that counts nothing and reads the output keeps one call, not each: 40 calls with other inputs pass, and it still refuses', { timeout: 60_000 }, async () => {
    const mentionsKey: EvaluatorDefinition = {
      name: 'mentions_key',
      description: 'matches a text holding an AWS access key id',
      configSchema: { type: 'object', additionalProperties: false },
      compile: () => (value: unknown) => ({ matched: JSON.stringify(value ?? null).includes('AKIA'), confidence: 1 }),
    };
    const guard = await guardWithPlugins([mentionsKey], [], {
      execution: 'server',
      scope: { step_types: ['tool'], stages: ['post'] },
      selector: { path: 'output' },
      evaluator: { name: 'mentions_key', config: {} },
      action: { decision: 'deny' },
    });
    const { gw } = await startTestGateway(closers, { agentName: 'sixth-pass', guard });
    const s = await httpSession(gw.url);
    const call = async (id: number, name: string, args: Record<string, unknown>) =>
      JSON.stringify(await (await s.post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })).json());
    for (let id = 1; id <= 40; id++) expect(await call(id, 'run_sql', { query: `select ${id}` })).not.toContain('withheld');
    // The fixture's `leak` tool answers with its key as an error.
    expect(await call(41, 'leak', { how: 'error' })).not.toContain('AKIA');
  });
});

describe('what a server sends base64-encoded', () => {
  const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
  const records = [sdkControl(1, 'deny-card-numbers', denyCardOutput)];
  /** Bytes that are not UTF-8 (a PNG's signature), then digits a card number's shape: checked as base64, never decoded. */
  /** A text file as Windows writes it: UTF-16, little-endian, after its byte-order mark. */
  const UTF16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`card ${CARD}`, 'utf16le')]).toString('base64');
  const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from(CARD)]).toString('base64');

  it('a text resource sent as a base64 blob is checked as its text: a card number in it is refused, and reaches neither client nor log', async () => {
    const { send, answerTo, reports } = await setup((request, reply) => {
      if (request.method !== 'resources/read') return reply({ jsonrpc: '2.0', id: request.id, result: {} });
      reply({ jsonrpc: '2.0', id: request.id, result: { contents: [{ uri: 'file:///billing.txt', mimeType: 'text/plain; charset=utf-8', blob: b64(`card: ${CARD}\n`) }] } });
    }, records);
    await send({ jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'file:///billing.txt' } });
    const answer = JSON.stringify(await answerTo(1));
    expect(answer).toContain('error');
    expect(answer).not.toContain(b64(`card: ${CARD}\n`));
    expect(JSON.stringify(reports)).not.toContain('1111 1111');
  });

  it('so is an embedded resource in a tool answer, a blob with no mime type and a UTF-16 text; an image stays as it is', async () => {
    const answers: Record<string, Record<string, unknown>> = {
      embedded: { content: [{ type: 'resource', resource: { uri: 'file:///a.json', mimeType: 'application/json', blob: b64(`{"card":"${CARD}"}`) } }] },
      untyped: { content: [{ type: 'resource', resource: { uri: 'file:///b', blob: b64(CARD) } }] },
      utf16: { content: [{ type: 'resource', resource: { uri: 'file:///c.txt', mimeType: 'text/plain', blob: UTF16 } }] },
      image: { content: [{ type: 'image', mimeType: 'image/png', data: PNG }] },
    };
    const { call } = await setup((request, reply) => {
      const name = (request.params as { name?: string }).name ?? '';
      reply({ jsonrpc: '2.0', id: request.id, result: answers[name] ?? {} });
    }, records, { tools: Object.keys(answers).map((name) => ({ name, inputSchema: { type: 'object' } })) });
    expect(await call(1, 'embedded')).not.toContain(b64(`{"card":"${CARD}"}`));
    expect(await call(2, 'untyped')).not.toContain(b64(CARD));
    expect(await call(4, 'utf16')).not.toContain(UTF16);
    expect(await call(3, 'image')).toContain(PNG);
  });

  it("a sampling request of the server's carrying a card number as an image's base64 data, while a call runs, is withheld and answered to the server", async () => {
    let release!: () => void;
    let fromServer!: (message: JSONRPCMessage) => void;
    const { send, settle, received, seenByServer } = await setup((request, reply) => {
      fromServer = reply;
      if (request.method === 'tools/call') release = () => reply({ jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: 'notes' }] } });
      else reply({ jsonrpc: '2.0', id: request.id, result: {} });
    }, records);
    await send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_file', arguments: { path: 'billing' } } });
    await expect.poll(() => release !== undefined).toBe(true);
    const data = b64(`card ${CARD}`);
    fromServer({ jsonrpc: '2.0', id: 'sample-1', method: 'sampling/createMessage', params: { maxTokens: 10, messages: [{ role: 'user', content: { type: 'image', mimeType: 'image/png', data } }] } });
    await settle(2);
    release();
    expect(JSON.stringify(received)).not.toContain(data);
    await expect.poll(() => seenByServer.some((m) => 'id' in m && m.id === 'sample-1' && 'error' in m)).toBe(true);
  });
});

describe('a client that never reads its SSE stream (HTTP face)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A POST to `sid` whose answer (an SSE stream, unless `accept` prefers JSON) is not read; the response once its head came. */
  const stalledPost = (url: string, sid: string, body: unknown, accept = 'text/event-stream, application/json') => new Promise<IncomingMessage>((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const req = request({
      host: hostname, port, path: '/mcp', method: 'POST', agent: false,
      headers: { accept, 'content-type': 'application/json', 'mcp-session-id': sid, 'mcp-protocol-version': VERSION },
    }, (res) => {
      res.pause();
      resolve(res);
    });
    req.once('error', reject);
    req.end(JSON.stringify(body));
  });

  it('a stream whose last event its client never read is not written to again, keep-alive or not: nothing is thrown out of the gateway, and it serves on', async () => {
    // Only the keep-alive's interval is the test's to advance; sockets and the server's process run as they do.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown): void => void uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    closers.push(async () => void process.off('uncaughtException', onUncaught));
    const { gw, decisions } = await startTestGateway(closers, { agentName: 'sixth-pass' });
    const s = await httpSession(gw.url);
    // 10 MB answered on a stream its client does not read: the sockets take a few MB, the rest waits in the gateway.
    const stalled = await stalledPost(gw.url, s.sid, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'big', arguments: {} } });
    expect(stalled.headers['content-type']).toBe('text/event-stream');
    await expect.poll(() => decisions.some((d) => d.step.name === 'big' && d.stage === 'post')).toBe(true);
    // The answer was its stream's last event: the stream is over. Then the keep-alive's time comes, twice.
    vi.advanceTimersByTime(40_000);
    const ping = await s.post({ jsonrpc: '2.0', id: 2, method: 'ping' });
    expect(await ping.json()).toMatchObject({ id: 2, result: {} });
    await new Promise((resolve) => setImmediate(resolve));
    expect(uncaught.map(String)).toEqual([]);
    stalled.destroy();
  });

  it('a client that reads nothing of its answers has its connection closed after the send timeout, and what was buffered for it let go: a JSON answer and an SSE one', { timeout: 60_000 }, async () => {
    const { gw, reports } = await startTestGateway(closers, { agentName: 'sixth-pass', sendTimeoutMs: 1000 });
    const s = await httpSession(gw.url);
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big', arguments: {} } });
    // One answer as JSON, one as an SSE stream: 10 MB each, more than the sockets take.
    const json = await stalledPost(gw.url, s.sid, call(1), 'application/json, text/event-stream');
    const sse = await stalledPost(gw.url, s.sid, call(2), 'text/event-stream, application/json');
    expect(json.headers['content-type']).toBe('application/json');
    expect(sse.headers['content-type']).toBe('text/event-stream');
    await expect.poll(() => reports.filter((l) => l.includes('read nothing of its response')).length, { timeout: 30_000 }).toBe(2);
    // Read now: each ends short of its 10 MB answer, cut, not finished.
    for (const stalled of [json, sse]) {
      let bytes = 0;
      stalled.on('data', (chunk: Buffer) => (bytes += chunk.length));
      const ended = await new Promise<string>((resolve) => {
        stalled.once('end', () => resolve(stalled.complete ? 'complete' : 'cut'));
        stalled.once('error', () => resolve('cut'));
        stalled.once('aborted', () => resolve('cut'));
        stalled.resume();
      });
      expect(ended).toBe('cut');
      expect(bytes).toBeLessThan(10_000_000);
    }
    // The session serves on.
    expect(await (await s.post({ jsonrpc: '2.0', id: 3, method: 'ping' })).json()).toMatchObject({ id: 3, result: {} });
  });
});
