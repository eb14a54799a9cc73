/**
 * The gateway in front of a streamable-HTTP MCP server (the reference "everything" server
 * from npm, run with its own HTTP transport): the server's requests to the client
 * (elicitation, sampling) reach the client and its answers reach the server, every time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema, CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMcpProxy, type McpProxy } from '../../src/adapters/mcp.js';
import { GuardAgent } from '../../src/sdk/index.js';
import { quietLogger } from './guarded-agent.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const everything = join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

let upstream: ChildProcess;
let url: string;
beforeAll(async () => {
  const port = await freePort();
  upstream = spawn(process.execPath, [everything, 'streamableHttp'], { env: { PATH: process.env.PATH ?? '', PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve) => upstream.stderr!.on('data', (c: Buffer) => c.toString().includes('listening') && resolve()));
  url = `http://127.0.0.1:${port}/mcp`;
});
afterAll(() => void upstream.kill());

async function connect(): Promise<{ client: Client; proxy: McpProxy; guard: GuardAgent }> {
  const guard = new GuardAgent({ agentName: 'http-upstream', serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, []);
  const [clientSide, proxySide] = InMemoryTransport.createLinkedPair();
  const proxy = await startMcpProxy({ guard, upstream: { url }, client: proxySide, report: () => undefined });
  const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: { elicitation: { form: {} }, sampling: {}, roots: { listChanged: true } } });
  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
  client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name: 'Ada', check: true, email: 'ada@example.com', integer: 5, number: 2, enums: 'value1', untitledSingleSelectEnum: 'value1', titledSingleSelectEnum: 'value1', untitledMultipleSelectEnum: ['value1'], titledMultipleSelectEnum: ['value1'], legacyTitledEnum: 'value1' } }));
  client.setRequestHandler(CreateMessageRequestSchema, () => ({ role: 'assistant', content: { type: 'text', text: 'sampled reply' }, model: 'test-model', stopReason: 'endTurn' }));
  await client.connect(clientSide);
  return { client, proxy, guard };
}

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('');

describe('an HTTP upstream', () => {
  it('relays the server\'s own requests (roots/list once initialized, elicitation, sampling) and its tools/list_changed, every time', { timeout: 60_000 }, async () => {
    for (let round = 0; round < 7; round++) {
      const { client, proxy, guard } = await connect();
      try {
        // The server asks for the client's roots on its own (not within a request) shortly after initialize.
        await expect.poll(async () => textOf((await client.callTool({ name: 'get-roots-list', arguments: {} }, CallToolResultSchema)) as CallToolResult), { timeout: 5000 }).toContain('file:///work');
        const elicited = (await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }, CallToolResultSchema)) as CallToolResult;
        expect(textOf(elicited), `round ${round}`).toContain('Ada');
        const sampled = (await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 10 } }, CallToolResultSchema)) as CallToolResult;
        expect(textOf(sampled), `round ${round}`).toContain('sampled reply');
      } finally {
        await client.close();
        await proxy.close();
        await guard.shutdown();
      }
    }
  });
});
