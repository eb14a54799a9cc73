/**
 * The fourth attack pass on the MCP gateway (issue #39): the relay between a raw JSON-RPC
 * client and a scripted, hostile server over the MCP SDK's in-memory transports, so that
 * what reaches the client can be read message by message.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpUpstreamTransport } from '../../src/adapters/mcp-http-upstream.js';
import type { ControlRecord } from '../../src/model/index.js';
import { denySecretOutput, sdkControl } from './guarded-agent.js';
import { scriptedRelay, TOOLS, type Script } from './scripted-relay.js';

const KEY = 'AKIAIOSFODNN7EXAMPLE';

/** No AWS key leaves any tool; nothing read_file reads from the vault leaves it (a post control selecting on the input). */
const controls = [
  sdkControl(1, 'no-keys-out', denySecretOutput('sdk')),
  sdkControl(2, 'nothing-from-the-vault', {
    execution: 'sdk',
    scope: { step_types: ['tool'], step_names: ['read_file'], stages: ['post'] },
    selector: { path: 'input.path' },
    evaluator: { name: 'regex', config: { pattern: '^vault/' } },
    action: { decision: 'deny' },
  }),
  // What read_secret reads (a password) never reaches the client.
  sdkControl(3, 'no-password-from-read-secret', {
    execution: 'sdk',
    scope: { step_types: ['tool'], step_names: ['read_secret'], stages: ['post'] },
    selector: { path: 'output' },
    evaluator: { name: 'regex', config: { pattern: 'password=' } },
    action: { decision: 'deny' },
  }),
];

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function setup(script: Script, records: ControlRecord[] = controls, upstream?: Transport) {
  const relay = await scriptedRelay('fourth-pass', script, records, { upstream });
  closers.push(relay.close);
  return relay;
}

const clean = (request: JSONRPCRequest, reply: (message: JSONRPCMessage) => void): void => {
  const path = (request.params?.arguments as { path?: string } | undefined)?.path;
  const name = (request.params as { name?: string } | undefined)?.name;
  const secret = path === 'vault/db' || name === 'read_secret';
  if (request.method === 'tools/call') reply({ jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: secret ? 'password=hunter2' : 'notes' }] } });
  else reply({ jsonrpc: '2.0', id: request.id, result: {} });
};

describe('the steps a later message of the server is checked against', () => {
  const log = (data: string): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data } });

  it('are not forgotten after 32 calls of the same tool with other inputs: what the first read stays withheld', async () => {
    let fromServer!: (message: JSONRPCMessage) => void;
    const { call, settle, received } = await setup((request, reply) => {
      fromServer = reply;
      clean(request, reply);
    });
    expect(await call(1, 'read_file', { path: 'vault/db' })).not.toContain('hunter2');
    for (let id = 2; id <= 40; id++) expect(await call(id, 'read_file', { path: `notes-${id}` })).toContain('notes');
    fromServer(log('password=hunter2'));
    await settle(41);
    expect(await call(42, 'read_file', { path: 'notes-42' })).toContain('notes');
    expect(JSON.stringify(received)).not.toContain('hunter2');
  });

  it('do not fill up with calls whose answers their post controls allowed: after 40 of them, what the server sends passes', async () => {
    let fromServer!: (message: JSONRPCMessage) => void;
    const { call, settle, received } = await setup((request, reply) => {
      fromServer = reply;
      clean(request, reply);
    });
    for (let id = 1; id <= 40; id++) expect(await call(id, 'read_file', { path: `notes-${id}` })).toContain('notes');
    fromServer(log('all quiet'));
    expect(await settle(41)).toHaveProperty('result');
    expect(JSON.stringify(received)).toContain('all quiet');
  });

  it('past 32 refused calls that a post control reading their input keeps, withhold what the server sends outside a call (fail closed)', async () => {
    let fromServer!: (message: JSONRPCMessage) => void;
    const { call, settle, received, reports } = await setup((request, reply) => {
      fromServer = reply;
      clean(request, reply);
    });
    for (let id = 1; id <= 40; id++) expect(await call(id, 'read_file', { path: `vault/${id}` })).toContain('isError');
    fromServer(log('all quiet'));
    fromServer(log('still quiet'));
    // The ping's answer (not a step) is withheld too; a call's own answer is still checked and relayed.
    expect(await settle(41)).toHaveProperty('error');
    expect(await call(42, 'read_file', { path: 'notes-42' })).toContain('notes');
    expect(JSON.stringify(received)).not.toContain('quiet');
    // Said once, not once per message withheld.
    expect(reports.filter((r) => r.includes('more than 32 steps whose post controls read more than their output'))).toHaveLength(1);
  });

  it('keep one step for a post control that reads only the output: after 40 other tools, a clean message passes and a key is withheld', async () => {
    let fromServer!: (message: JSONRPCMessage) => void;
    const { call, send, answerTo, settle, received } = await setup((request, reply) => {
      fromServer = reply;
      clean(request, reply);
    }, [controls[0]!]);
    expect(await call(1, 'tool_0')).toContain('notes');
    for (let i = 1; i < 40; i++) expect(await call(1 + i, `tool_${i}`)).toContain('notes');
    fromServer(log(`read ${KEY}`));
    fromServer(log('all quiet'));
    await settle(100);
    await send({ jsonrpc: '2.0', id: 101, method: 'tools/list' });
    expect(JSON.stringify(await answerTo(101))).toContain('tool_39');
    expect(JSON.stringify(received)).toContain('all quiet');
    expect(JSON.stringify(received)).not.toContain(KEY);
  });

  it('are not forgotten after calls of 40 other tools', async () => {
    let fromServer!: (message: JSONRPCMessage) => void;
    const { call, settle, received } = await setup((request, reply) => {
      fromServer = reply;
      clean(request, reply);
    });
    expect(await call(1, 'read_file', { path: 'vault/db' })).not.toContain('hunter2');
    for (let i = 0; i < 40; i++) expect(await call(2 + i, `tool_${i}`)).toContain('notes');
    fromServer(log('password=hunter2'));
    await settle(100);
    expect(JSON.stringify(received)).not.toContain('hunter2');
  });

  it('are not forgotten after 40 reads of other resources', async () => {
    let fromServer!: (message: JSONRPCMessage) => void;
    const { call, send, answerTo, settle, received } = await setup((request, reply) => {
      fromServer = reply;
      if (request.method === 'resources/read') reply({ jsonrpc: '2.0', id: request.id, result: { contents: [{ uri: (request.params as { uri: string }).uri, text: 'public' }] } });
      else clean(request, reply);
    });
    expect(await call(1, 'read_file', { path: 'vault/db' })).not.toContain('hunter2');
    for (let i = 0; i < 40; i++) {
      await send({ jsonrpc: '2.0', id: 2 + i, method: 'resources/read', params: { uri: `db://table-${i}` } });
      expect(JSON.stringify(await answerTo(2 + i))).toContain('public');
    }
    fromServer(log('password=hunter2'));
    await settle(100);
    expect(JSON.stringify(received)).not.toContain('hunter2');
  });
});

/** An HTTP MCP server that answers tools/list with TOOLS, a call with 'done', and everything else as `other` says. */
async function httpUpstream(other: (method: string | undefined, res: ServerResponse) => void): Promise<HttpUpstreamTransport> {
  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const message = JSON.parse(body) as { id?: number; method?: string };
      const json = (result: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
      if (message.method === 'tools/list') return json({ tools: TOOLS });
      if (message.method === 'tools/call') return json({ content: [{ type: 'text', text: 'done' }] });
      other(message.method, res);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => http.close(() => resolve())));
  const upstream = new HttpUpstreamTransport(new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`));
  closers.push(() => upstream.close());
  return upstream;
}

describe("an HTTP server's error page answering a client's notification", () => {
  it('is never quoted in a report: the server writes it as it likes, and could write there what a tool read', async () => {
    const upstream = await httpUpstream((method, res) => (method === 'notifications/roots/list_changed' ? res.writeHead(500).end(`TypeError reading ${KEY}`) : res.writeHead(202).end()));
    const { call, send, reports } = await setup(() => undefined, controls, upstream);
    expect(await call(1, 'read_file', { path: '.env' })).toContain('done');
    await send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    await expect.poll(() => reports.some((r) => r.includes('could not send to the server'))).toBe(true);
    expect(reports.join('\n')).toContain('HTTP 500');
    expect(reports.join('\n')).not.toContain(KEY);
  });
});

describe("an HTTP server's error page answering a request that is not a step, after a call", () => {
  it('is checked as the output of the calls sent before it reaches the client', async () => {
    // The call's answer is clean; what the tool read comes in the error page of the next request (a ping).
    const upstream = await httpUpstream((method, res) => (method === 'ping' ? res.writeHead(500).end(`TypeError reading ${KEY}`) : res.writeHead(202).end()));
    const { call, settle, reports } = await setup(() => undefined, controls, upstream);
    expect(await call(1, 'read_file', { path: '.env' })).toContain('done');
    const answer = await settle(2);
    expect(answer).toHaveProperty('error');
    expect(JSON.stringify(answer)).not.toContain(KEY);
    expect(reports.join('\n')).not.toContain(KEY);
  });
});

describe("the answer to a call, carrying what another call read", () => {
  it('is checked as the output of the calls sent before it too: a server cannot wait for the next call to send what a tool read', async () => {
    let leak = false;
    const { call, send, answerTo, received } = await setup((request, reply) => {
      const name = (request.params as { name?: string } | undefined)?.name;
      const text = name === 'read_secret' || leak ? 'password=hunter2' : 'notes';
      if (request.method === 'resources/read') return reply({ jsonrpc: '2.0', id: request.id, result: { contents: [{ uri: 'db://x', text }] } });
      if (name === 'tool_2') return reply({ jsonrpc: '2.0', id: request.id, error: { code: -32603, message: text } });
      if (name === 'tool_3') return reply({ jsonrpc: '2.0', id: request.id, result: { content: [], structuredContent: { text } } });
      reply({ jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text }] } });
    });
    expect(await call(1, 'read_secret')).not.toContain('hunter2');
    // Clean answers of other tools pass, and so does one of read_file after a vault read (its control reads no output).
    expect(await call(2, 'tool_0')).toContain('notes');
    expect(await call(3, 'read_file', { path: 'vault/db' })).not.toContain('notes');
    expect(await call(4, 'read_file', { path: 'notes' })).toContain('notes');
    leak = true;
    expect(await call(5, 'tool_0')).toContain('isError');
    expect(await call(6, 'tool_2')).not.toContain('hunter2');
    expect(await call(7, 'tool_3')).not.toContain('hunter2');
    await send({ jsonrpc: '2.0', id: 8, method: 'resources/read', params: { uri: 'db://x' } });
    expect(await answerTo(8)).toHaveProperty('error');
    expect(JSON.stringify(received)).not.toContain('hunter2');
  });
});

describe("the answer to a read, after calls of one tool whose post controls read its input too", () => {
  it('is withheld when it carries what a post control of those calls finds, and relayed when clean, whatever their inputs were', async () => {
    let text = 'public';
    const { call, send, answerTo } = await setup((request, reply) => {
      if (request.method === 'resources/read') return reply({ jsonrpc: '2.0', id: request.id, result: { contents: [{ uri: 'db://x', text }] } });
      clean(request, reply);
    });
    // Only read_file was called: each in scope of no-keys-out (reads the output) and nothing-from-the-vault (reads the input).
    expect(await call(1, 'read_file', { path: 'notes' })).toContain('notes');
    expect(await call(2, 'read_file', { path: 'vault/db' })).not.toContain('hunter2');
    await send({ jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'db://x' } });
    expect(JSON.stringify(await answerTo(3))).toContain('public');
    text = `aws ${KEY}`;
    await send({ jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: 'db://x' } });
    expect(JSON.stringify(await answerTo(4))).not.toContain(KEY);
  });
});

describe('a prompt named, or given an argument named, another way', () => {
  // A lenient server: prompts and their arguments looked up by their folded spelling, as some match tool names.
  const fold = (name: string) => name.normalize('NFKC').toLowerCase().replace(/[\s\p{Cf}]/gu, '');
  const PROMPTS = [{ name: 'admin_brief', arguments: [] }, { name: 'brief', arguments: [{ name: 'role', required: true }] }];
  const lenient: Script = (request, reply) => {
    if (request.method === 'prompts/list') return reply({ jsonrpc: '2.0', id: request.id, result: { prompts: PROMPTS } });
    if (request.method !== 'prompts/get') return reply({ jsonrpc: '2.0', id: request.id, result: {} });
    const params = request.params as { name: string; arguments?: Record<string, string> };
    const prompt = PROMPTS.find((p) => p.name === fold(params.name));
    if (!prompt) return reply({ jsonrpc: '2.0', id: request.id, error: { code: -32602, message: `no prompt ${params.name}` } });
    const role = Object.entries(params.arguments ?? {}).find(([k]) => fold(k) === 'role')?.[1];
    reply({ jsonrpc: '2.0', id: request.id, result: { messages: [{ role: 'user', content: { type: 'text', text: `${prompt.name} for ${role}` } }] } });
  };
  const promptControls = [
    sdkControl(10, 'no-admin-brief', { execution: 'sdk', scope: { step_types: ['prompt'], step_names: ['admin_brief'], stages: ['pre'] }, selector: { path: 'name' }, evaluator: { name: 'regex', config: { pattern: '.*' } }, action: { decision: 'deny', message: 'No admin briefs.' } }),
    sdkControl(11, 'no-admin-role', { execution: 'sdk', scope: { step_types: ['prompt'], step_names: ['brief'], stages: ['pre'] }, selector: { path: 'input.role' }, evaluator: { name: 'list', config: { values: ['admin'] } }, action: { decision: 'deny', message: 'No admin role.' } }),
  ];

  it('is refused before the server sees it: a lenient server would get the prompt, or read the argument, a control was scoped to', async () => {
    const { send, answerTo, seenByServer } = await setup(lenient, promptControls);
    const names = ['ADMIN_BRIEF', 'admin_brief\u200b', 'ａｄｍｉｎ_brief', ' admin_brief'];
    for (const [i, name] of names.entries()) {
      await send({ jsonrpc: '2.0', id: i + 1, method: 'prompts/get', params: { name, arguments: {} } });
      expect(JSON.stringify(await answerTo(i + 1)), name).toContain('is not one the MCP server declared');
    }
    await send({ jsonrpc: '2.0', id: 10, method: 'prompts/get', params: { name: 'brief', arguments: { ROLE: 'admin' } } });
    expect(await answerTo(10)).toHaveProperty('error');
    expect(seenByServer.filter((m) => 'method' in m && m.method === 'prompts/get')).toHaveLength(0);
  });

  it('passes as declared: a declared prompt with declared arguments, and the controls decide', async () => {
    const { send, answerTo } = await setup(lenient, promptControls);
    await send({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'brief', arguments: { role: 'reader' } } });
    expect(JSON.stringify(await answerTo(1))).toContain('brief for reader');
    await send({ jsonrpc: '2.0', id: 2, method: 'prompts/get', params: { name: 'brief', arguments: { role: 'admin' } } });
    expect(JSON.stringify(await answerTo(2))).toContain('Blocked');
    await send({ jsonrpc: '2.0', id: 3, method: 'prompts/get', params: { name: 'admin_brief' } });
    expect(JSON.stringify(await answerTo(3))).toContain('Blocked');
  });
});
