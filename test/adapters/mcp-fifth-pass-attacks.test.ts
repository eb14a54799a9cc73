/**
 * The fifth attack pass on the MCP gateway (issue #39): the relay between a raw JSON-RPC
 * client and a scripted server over the MCP SDK's in-memory transports, as in the fourth.
 */
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { ControlDataInput, ControlRecord } from '../../src/model/index.js';
import { sdkControl } from './guarded-agent.js';
import { scriptedRelay, type Script } from './scripted-relay.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function setup(script: Script, records: ControlRecord[], upstream?: Transport) {
  const relay = await scriptedRelay('fifth-pass', script, records, { upstream });
  closers.push(relay.close);
  return relay;
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
