/**
 * `guardctl mcp-proxy` (the built binary, over stdio) on an ask: a real MCP SDK Client
 * that answers elicitation, the fixture server process behind the proxy, a guard server
 * with keys. With GUARD_MCP_APPROVER_API_KEY the person's yes runs the call; with only the
 * agent's regular key it decides nothing, and the decision made through guardctl is waited for.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GuardClient } from '../../src/client/index.js';
import { ADMIN, APPROVER, KEYS, REGULAR } from '../approvals/helpers.js';
import { startTestServer, type TestServer } from '../support/server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist/cli/main.js');
const fixture = join(root, 'test/fixtures/mcp/server.mjs');

let server: TestServer;
let admin: GuardClient;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-mcp-approval-e2e-'));
  server = await startTestServer({ env: KEYS, listen: true });
  admin = new GuardClient({ serverUrl: server.url, apiKey: ADMIN });
  await admin.initAgent({ agent_name: 'desk' });
  const { control_id } = await admin.createControl({
    name: 'ask-deletes',
    data: {
      scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
      selector: { path: 'input.query' },
      evaluator: { name: 'regex', config: { pattern: '(?i)^delete' } },
      action: { decision: 'ask' },
    },
  });
  await admin.link('desk', control_id);
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
});

let seq = 0;
async function connect(env: Record<string, string>) {
  const log = join(dir, `calls-${++seq}.log`);
  writeFileSync(log, '');
  const base = { ...(process.env as Record<string, string>) };
  delete base.GUARD_MCP_APPROVER_API_KEY;
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp-proxy', '--agent', 'desk', '--server', server.url, '--pass-env', 'MCP_FIXTURE_LOG', '--', process.execPath, fixture],
    env: { ...base, GUARD_API_KEY: REGULAR, MCP_FIXTURE_LOG: log, ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: 'e2e', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked.push(request.params.message);
    return { action: 'accept', content: { approve: true, reason: 'ok by me' } };
  });
  await client.connect(transport);
  clients.push(client);
  const call = (query: string): Promise<CallToolResult> =>
    client.request({ method: 'tools/call', params: { name: 'run_sql', arguments: { query } } }, CallToolResultSchema, { timeout: 60_000 });
  return { call, asked, ran: () => readFileSync(log, 'utf8'), stderr: () => stderr };
}

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('');

describe('guardctl mcp-proxy on an ask', () => {
  it('with GUARD_MCP_APPROVER_API_KEY, the person answering in the client runs the call', async () => {
    const { call, asked, ran } = await connect({ GUARD_MCP_APPROVER_API_KEY: APPROVER });
    expect(textOf(await call('delete from drafts'))).toBe('3 rows for delete from drafts');
    expect(asked).toHaveLength(1);
    expect(ran()).toBe('delete from drafts\n');
    const [record] = await admin.approvals.list({ status: 'approved' });
    expect(record).toMatchObject({ step_name: 'run_sql', reason: 'ok by me', decided_by: expect.stringMatching(/^approver:/) });
  });

  it("with the agent's regular key only, the person's yes decides nothing: the call runs once approved through guardctl", async () => {
    const { call, asked, ran, stderr } = await connect({});
    const calling = call('delete from carts');
    let id = '';
    await expect.poll(async () => (id = (await admin.approvals.list({ status: 'pending' }))[0]?.id ?? '')).not.toBe('');
    await expect.poll(() => asked.length).toBe(1);
    // The person said yes in the client; nothing ran and the approval is still pending.
    expect(ran()).toBe('');
    await expect.poll(() => stderr()).toContain("the gateway's key may not decide approvals");
    expect((await admin.approvals.get(id)).status).toBe('pending');
    await admin.approvals.approve(id);
    expect(textOf(await calling)).toBe('3 rows for delete from carts');
    expect(ran()).toBe('delete from carts\n');
  });
});
