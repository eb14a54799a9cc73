/**
 * The fifth attack pass on the MCP gateway (issue #39): the relay between a raw JSON-RPC
 * client and a scripted server over the MCP SDK's in-memory transports, as in the fourth.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { McpRelay } from '../../src/adapters/mcp-relay.js';
import { ControlDataSchema, type ControlDataInput, type ControlRecord } from '../../src/model/index.js';
import { GuardAgent } from '../../src/sdk/index.js';
import { quietLogger } from './guarded-agent.js';

function sdkControl(id: number, name: string, data: ControlDataInput): ControlRecord {
  return { control_id: id, name, enabled: true, managed_by: null, source: null, created_at: '', updated_at: '', data: ControlDataSchema.parse(data) };
}

const TOOLS = [
  { name: 'read_file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } },
  { name: 'read_secret', inputSchema: { type: 'object' } },
  ...Array.from({ length: 40 }, (_, i) => ({ name: `tool_${i}`, inputSchema: { type: 'object' } })),
];

type Script = (request: JSONRPCRequest, send: (message: JSONRPCMessage) => void) => void;

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A relay between a raw client and a server that answers tools/list with TOOLS and everything else with `script`. */
async function setup(script: Script, records: ControlRecord[], upstream?: Transport) {
  const [clientSide, relayClientSide] = InMemoryTransport.createLinkedPair();
  const [inMemoryRelaySide, serverSide] = InMemoryTransport.createLinkedPair();
  const relayServerSide = upstream ?? inMemoryRelaySide;
  const guard = new GuardAgent({ agentName: 'fifth-pass', serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, records);
  const reports: string[] = [];
  const relay = new McpRelay({ guard, client: relayClientSide, server: relayServerSide, serverName: 'hostile', serverNameFixed: true, requestTimeoutMs: 0, report: (l) => reports.push(l) });
  relayClientSide.onmessage = (m) => relay.fromClient(m);
  relayServerSide.onmessage = (m: JSONRPCMessage) => relay.fromServer(m);
  const seenByServer: JSONRPCMessage[] = [];
  const toServer = (message: JSONRPCMessage): void => void serverSide.send(message);
  serverSide.onmessage = (m) => {
    seenByServer.push(m);
    if (!('method' in m) || !('id' in m)) return;
    if (m.method === 'tools/list') toServer({ jsonrpc: '2.0', id: m.id, result: { tools: TOOLS } });
    else script(m, toServer);
  };
  const received: JSONRPCMessage[] = [];
  clientSide.onmessage = (m) => received.push(m);
  for (const t of [clientSide, relayClientSide, relayServerSide, serverSide]) await t.start();
  closers.push(async () => {
    relay.close();
    await clientSide.close();
    await serverSide.close();
    await guard.shutdown();
  });
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
  return { send, answerTo, call, settle, received, seenByServer, reports };
}


const answerNotes = (request: JSONRPCRequest, reply: (message: JSONRPCMessage) => void): void => {
  if (request.method === 'tools/call') reply({ jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text: 'notes' }] } });
  else reply({ jsonrpc: '2.0', id: request.id, result: {} });
};

/** No password anywhere in a step (`*`: input and output): a post control reading the output and more. */
const wholeStep = (mode: 'enforce' | 'shadow'): ControlDataInput => ({
  execution: 'sdk',
  mode,
  scope: { step_types: ['tool'], stages: ['post'] },
  selector: { path: '*' },
  evaluator: { name: 'regex', config: { pattern: 'password=' } },
  action: { decision: 'deny' },
});

describe('the steps kept for later messages, with controls that never refuse', () => {
  const log = (data: string): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data } });

  it('a shadow post control reading the whole step withholds nothing: after 40 calls with other inputs, answers and log lines pass', async () => {
    let fromServer!: (message: JSONRPCMessage) => void;
    const { call, settle, received } = await setup((request, reply) => {
      fromServer = reply;
      answerNotes(request, reply);
    }, [sdkControl(1, 'watch-passwords', wholeStep('shadow'))]);
    for (let id = 1; id <= 40; id++) expect(await call(id, 'read_file', { path: `notes-${id}` })).toContain('notes');
    fromServer(log('all quiet'));
    expect(await settle(41)).toHaveProperty('result');
    expect(JSON.stringify(received)).toContain('all quiet');
    expect(await call(42, 'read_file', { path: 'notes-42' })).toContain('"notes"');
  });
});

describe('an enforced post control reading the whole step, past the calls the gateway keeps', () => {
  it('withholds the answers of later calls too, and says so once: the session fails closed, as the docs say', async () => {
    const { call, reports } = await setup(answerNotes, [sdkControl(1, 'watch-passwords', wholeStep('enforce'))]);
    const answers: string[] = [];
    for (let id = 1; id <= 40; id++) answers.push(await call(id, 'read_file', { path: `notes-${id}` }));
    // Each call is kept by its input for a control reading the whole step: 32 are kept, the 33rd lets the first go.
    expect(answers.slice(0, 32).every((a) => a.includes('"notes"'))).toBe(true);
    expect(answers.slice(33).every((a) => a.includes('withheld') && !a.includes('"notes"'))).toBe(true);
    expect(reports.filter((r) => r.includes('will withhold every later message'))).toHaveLength(1);
    expect(reports.find((r) => r.includes('will withhold every later message'))).toContain('a new session starts afresh');
  });
});

describe('a prompt list that changes while the gateway reads it', () => {
  const fold = (name: string) => name.normalize('NFKC').toLowerCase().replace(/[\s\p{Cf}]/gu, '');
  const OLD = [{ name: 'brief', arguments: [] }];
  const NEW = [{ name: 'brief', arguments: [{ name: 'role', required: true }] }];
  const noAdminRole = sdkControl(11, 'no-admin-role', { execution: 'sdk', scope: { step_types: ['prompt'], step_names: ['brief'], stages: ['pre'] }, selector: { path: 'input.role' }, evaluator: { name: 'list', config: { values: ['admin'] } }, action: { decision: 'deny', message: 'No admin role.' } });

  it('checks arguments against the list read after the change, not one an older read finished with later', async () => {
    let held: (() => void) | null = null;
    let lists = 0;
    let fromServer!: (message: JSONRPCMessage) => void;
    const { send, answerTo, seenByServer } = await setup((request, reply) => {
      fromServer = reply;
      if (request.method === 'prompts/list') {
        const prompts = ++lists === 1 ? OLD : NEW;
        const answer = (): void => reply({ jsonrpc: '2.0', id: request.id, result: { prompts } });
        // The first read of the list is answered last, with the list as it was.
        if (lists === 1) held = answer;
        else answer();
        return;
      }
      if (request.method !== 'prompts/get') return reply({ jsonrpc: '2.0', id: request.id, result: {} });
      const params = request.params as { arguments?: Record<string, string> };
      const role = Object.entries(params.arguments ?? {}).find(([k]) => fold(k) === 'role')?.[1];
      reply({ jsonrpc: '2.0', id: request.id, result: { messages: [{ role: 'user', content: { type: 'text', text: `brief for ${role}` } }] } });
    }, [noAdminRole]);
    await send({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'brief', arguments: {} } });
    await expect.poll(() => held !== null).toBe(true);
    // The server changes its list (it declares `role` now) while the gateway's first read is pending.
    fromServer({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' });
    await send({ jsonrpc: '2.0', id: 2, method: 'prompts/get', params: { name: 'brief', arguments: { role: 'reader' } } });
    expect(JSON.stringify(await answerTo(2))).toContain('brief for reader');
    held!();
    await answerTo(1);
    await send({ jsonrpc: '2.0', id: 3, method: 'prompts/get', params: { name: 'brief', arguments: { ROLE: 'admin' } } });
    expect(await answerTo(3)).toHaveProperty('error');
    expect(JSON.stringify(seenByServer)).not.toContain('ROLE');
  });
});
