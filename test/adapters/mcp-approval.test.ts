/**
 * The MCP gateway on an ask (docs/approvals.md): a real MCP SDK Client that answers
 * elicitation, the gateway (startMcpProxy) in front of the fixture server (over HTTP), and a
 * real guard server with keys. The person's yes runs the call only when the gateway's key
 * may approve; otherwise, and for a client without elicitation, the decision made through
 * guardctl is waited for. Denied: a tool error with the reason, and the tool never ran.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema, ElicitRequestSchema, type CallToolResult, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startMcpHttpGateway } from '../../src/adapters/mcp-http.js';
import { startMcpProxy, type McpProxy } from '../../src/adapters/mcp.js';
import { GuardClient } from '../../src/client/index.js';
import { init, type GuardAgent } from '../../src/sdk/index.js';
import { ADMIN, APPROVER, KEYS, REGULAR } from '../approvals/helpers.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { quietLogger } from './guarded-agent.js';

const fixture = fileURLToPath(new URL('../fixtures/mcp/server.mjs', import.meta.url));
const KEY = 'AKIAQWERTYUIOPASDF7Z';

let dir: string;
// One fixture server over streamable HTTP for the whole file, a session of it per gateway:
// over stdio each test would start a Node process for it (about 0.3 CPU-seconds each). What
// reached it is its log since the gateway connected.
let upstream: ChildProcess;
let upstreamUrl: string;
let log: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-mcp-approval-'));
  log = join(dir, 'ran.log');
  writeFileSync(log, '');
  upstream = spawn(process.execPath, [fixture], { env: { ...process.env, MCP_FIXTURE_HTTP_PORT: '0', MCP_FIXTURE_LOG: log }, stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    upstream.stderr!.on('data', (chunk: Buffer) => {
      const m = /listening on (\d+)/.exec(chunk.toString());
      if (m) resolve(Number(m[1]));
    });
    upstream.once('exit', () => reject(new Error('the HTTP fixture exited')));
  });
  upstreamUrl = `http://127.0.0.1:${port}/mcp`;
});
afterAll(() => {
  upstream.kill();
  rmSync(dir, { recursive: true, force: true });
});

let server: TestServer;
let admin: GuardClient;
let guard: GuardAgent;
const open: Array<{ proxy: McpProxy; client: Client }> = [];
beforeEach(async () => {
  server = await startTestServer({ env: KEYS, listen: true });
  admin = new GuardClient({ serverUrl: server.url, apiKey: ADMIN });
  await admin.initAgent({ agent_name: 'gateway' });
  const { control_id } = await admin.createControl({
    name: 'ask-deletes',
    data: {
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)^delete' } },
      action: { decision: 'ask' },
    },
  });
  await admin.link('gateway', control_id);
  guard = await init({ agentName: 'gateway', serverUrl: server.url, apiKey: REGULAR, events: false, refreshIntervalSeconds: 0, logger: quietLogger });
});
afterEach(async () => {
  for (const { proxy, client } of open.splice(0)) {
    await client.close().catch(() => undefined);
    await proxy.close();
  }
  await guard.shutdown();
  await server.close();
});

type Answer = (request: ElicitRequest) => ElicitResult;

/** A client (with an elicitation handler when `answer` is given) through the gateway to the fixture server. */
async function connect(options: { answer?: Answer; approverApiKey?: string; requestTimeoutMs?: number } = {}) {
  const logStart = readFileSync(log, 'utf8').length;
  const [clientSide, proxySide] = InMemoryTransport.createLinkedPair();
  const reports: string[] = [];
  const proxy = await startMcpProxy({
    guard, upstream: { url: upstreamUrl }, client: proxySide,
    report: (l) => reports.push(l),
    ...(options.approverApiKey !== undefined && { approverApiKey: options.approverApiKey }),
    ...(options.requestTimeoutMs !== undefined && { requestTimeoutMs: options.requestTimeoutMs }),
  });
  const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: options.answer ? { elicitation: { form: {} } } : {} });
  const asked: ElicitRequest[] = [];
  if (options.answer) {
    const answer = options.answer;
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request);
      return answer(request);
    });
  }
  await client.connect(clientSide);
  open.push({ proxy, client });
  const call = (query: string) => client.request({ method: 'tools/call', params: { name: 'run_sql', arguments: { query } } }, CallToolResultSchema, { timeout: 60_000 });
  const ran = () => readFileSync(log, 'utf8').slice(logStart);
  return { call, asked, reports, ran };
}

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('');

/** Decides the pending approval through the API as a person would, once the gateway asked. */
async function decidePending(verb: 'approve' | 'deny', reason?: string): Promise<string> {
  let id = '';
  await expect.poll(async () => (id = (await admin.approvals.list({ status: 'pending' }))[0]?.id ?? '')).not.toBe('');
  await (verb === 'approve' ? admin.approvals.approve(id, reason) : admin.approvals.deny(id, reason));
  return id;
}

describe('the MCP gateway on an ask, with elicitation', () => {
  it('asks the person in the client; their yes, recorded with the approver key, runs the call once', async () => {
    const { call, asked, ran } = await connect({ approverApiKey: APPROVER, answer: () => ({ action: 'accept', content: { approve: true, reason: 'cleanup ticket 7' } }) });
    const query = `delete from sessions where token = '${KEY}'`;
    const result = await call(query);
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe(`3 rows for ${query}`);
    expect(ran()).toBe(`${query}\n`);

    expect(asked).toHaveLength(1);
    const question = asked[0]!.params;
    const [record] = await admin.approvals.list({ status: 'approved' });
    expect(question.message).toContain('tools/call "run_sql"');
    expect(question.message).toContain('Control "ask-deletes"');
    expect(question.message).toContain(record!.id);
    // The step as recorded: masked, never the key the agent sent.
    expect(question.message).not.toContain(KEY);
    expect(question).toMatchObject({ requestedSchema: { properties: { approve: { type: 'boolean' } }, required: ['approve'] } });
    expect(record).toMatchObject({ reason: 'cleanup ticket 7', decided_by: expect.stringMatching(/^approver:/) });
    expect(record!.used_at).not.toBeNull();
  });

  it("the person's yes does not approve when the gateway's key may not: the decision made through guardctl is waited for", async () => {
    const { call, asked, reports, ran } = await connect({ answer: () => ({ action: 'accept', content: { approve: true } }) });
    const calling = call('delete from carts');
    const id = await decidePending('approve', 'checked by ops');
    const result = await calling;
    expect(asked).toHaveLength(1);
    expect(textOf(result)).toBe('3 rows for delete from carts');
    expect(ran()).toBe('delete from carts\n');
    expect(reports.join('\n')).toContain("the gateway's key may not decide approvals");
    expect(await admin.approvals.get(id)).toMatchObject({ decided_by: expect.stringMatching(/^admin:/), reason: 'checked by ops' });
  });

  it("the person's no denies with their reason: a tool error, and the tool never ran", async () => {
    const { call, ran } = await connect({ approverApiKey: APPROVER, answer: () => ({ action: 'accept', content: { approve: false, reason: 'not on a Friday' } }) });
    const result = await call('delete from orders');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('a person denied this call');
    expect(textOf(result)).toContain('not on a Friday');
    expect(ran()).toBe('');
  });

  it("a reason with terminal escapes in the person's answer is recorded with them as spaces (the server refuses them)", async () => {
    const { call, ran } = await connect({ approverApiKey: APPROVER, answer: () => ({ action: 'accept', content: { approve: false, reason: 'no\u001b[2J\u001b]0;owned\u0007 way' } }) });
    const result = await call('delete from orders');
    expect(result.isError).toBe(true);
    expect(ran()).toBe('');
    const [record] = await admin.approvals.list({ status: 'denied' });
    expect(record).toMatchObject({ reason: 'no [2J ]0;owned  way', decided_by: expect.stringMatching(/^approver:/) });
  });

  it('declined: nothing is decided; once the request timeout ends the call still waits for a person and did not run', async () => {
    const { call, asked, ran } = await connect({ approverApiKey: APPROVER, requestTimeoutMs: 5000, answer: () => ({ action: 'decline' }) });
    const result = await call('delete from logs');
    expect(asked).toHaveLength(1);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('Waiting for approval');
    expect(ran()).toBe('');
    expect(await admin.approvals.list({ status: 'pending' })).toHaveLength(1);
  });

  it('an answer that is not a boolean approve decides nothing', async () => {
    const { call, ran } = await connect({ approverApiKey: APPROVER, requestTimeoutMs: 5000, answer: () => ({ action: 'accept', content: { approve: 'true' } }) });
    const result = await call('delete from logs');
    expect(result.isError).toBe(true);
    expect(ran()).toBe('');
    expect(await admin.approvals.list({ status: 'approved' })).toHaveLength(0);
  });
});

describe('the MCP gateway on an ask, without elicitation', () => {
  it('waits for the decision through guardctl: approved runs the call', async () => {
    const { call, ran } = await connect({ approverApiKey: APPROVER });
    const calling = call('delete from temp');
    await decidePending('approve');
    expect(textOf(await calling)).toBe('3 rows for delete from temp');
    expect(ran()).toBe('delete from temp\n');
  });

  it('denied through guardctl: a tool error with the reason', async () => {
    const { call, ran } = await connect();
    const calling = call('delete from users');
    await decidePending('deny', 'users are kept');
    const result = await calling;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('users are kept');
    expect(ran()).toBe('');
  });

  it('a step no ask control holds runs without a question', async () => {
    const { call, ran } = await connect({ answer: () => ({ action: 'accept', content: { approve: true } }) });
    expect(textOf(await call('select 1'))).toBe('3 rows for select 1');
    expect(ran()).toBe('select 1\n');
    expect(await admin.approvals.list({})).toHaveLength(0);
  });
});

describe('the MCP gateway on an ask, over its HTTP face', () => {
  it('asks the person through elicitation on the session\'s stream; their yes runs the call', async () => {
    const gw = await startMcpHttpGateway({
      guard, upstream: { command: process.execPath, args: [fixture] }, host: '127.0.0.1', port: 0, auth: { none: true }, approverApiKey: APPROVER, report: () => undefined,
    });
    const client = new Client({ name: 'http-test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { approve: true } };
    });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(gw.url)));
      const result = await client.request({ method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'delete from drafts' } } }, CallToolResultSchema, { timeout: 60_000 });
      expect(textOf(result)).toBe('3 rows for delete from drafts');
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain('tools/call "run_sql"');
      expect(await admin.approvals.list({ status: 'approved' })).toHaveLength(1);
    } finally {
      await client.close().catch(() => undefined);
      await gw.close();
    }
  });
});
