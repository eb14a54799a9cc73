/**
 * The sixth attack pass on the MCP gateway (issue #39): the relay between a raw JSON-RPC
 * client and a scripted server over the MCP SDK's in-memory transports, as in the fifth;
 * the plugin evaluators' cases run their controls on a real server that holds the plugins.
 */
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import type { EvaluatorDefinition, StepContext } from '../../src/evaluators/types.js';
import type { ControlDataInput, ControlRecord } from '../../src/model/index.js';
import { init } from '../../src/sdk/index.js';
import { addControl } from '../sdk/real-server.js';
import { startTestServer } from '../support/server.js';
import { quietLogger, sdkControl } from './guarded-agent.js';
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

describe('what a server sends base64-encoded', () => {
  const CARD = '4111 1111 1111 1111';
  const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
  /** No card number in what a resource read or a tool answers, in the gateway's process. */
  const denyCards: ControlDataInput = {
    execution: 'sdk',
    scope: { step_types: ['resource', 'tool'], stages: ['post'] },
    selector: { path: 'output' },
    evaluator: { name: 'pii', config: { kinds: ['credit_card'] } },
    action: { decision: 'deny', message: 'No card numbers.' },
  };
  const records = [sdkControl(1, 'deny-card-numbers', denyCards)];
  /** Bytes that are not UTF-8 (a PNG's signature), then digits a card number's shape: checked as base64, never decoded. */
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

  it('so is an embedded resource in a tool answer, and a blob with no mime type; an image stays as it is', async () => {
    const answers: Record<string, Record<string, unknown>> = {
      embedded: { content: [{ type: 'resource', resource: { uri: 'file:///a.json', mimeType: 'application/json', blob: b64(`{"card":"${CARD}"}`) } }] },
      untyped: { content: [{ type: 'resource', resource: { uri: 'file:///b', blob: b64(CARD) } }] },
      image: { content: [{ type: 'image', mimeType: 'image/png', data: PNG }] },
    };
    const { call } = await setup((request, reply) => {
      const name = (request.params as { name?: string }).name ?? '';
      reply({ jsonrpc: '2.0', id: request.id, result: answers[name] ?? {} });
    }, records, { tools: Object.keys(answers).map((name) => ({ name, inputSchema: { type: 'object' } })) });
    expect(await call(1, 'embedded')).not.toContain(b64(`{"card":"${CARD}"}`));
    expect(await call(2, 'untyped')).not.toContain(b64(CARD));
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
