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
import { quietLogger } from './guarded-agent.js';
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
