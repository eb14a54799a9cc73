/**
 * `guardctl mcp-proxy --listen` as an operator starts it (the built binary) and as an MCP
 * client reaches it (the SDK's streamable-HTTP client): it does not start without a way
 * to authenticate clients, serves those with GUARD_MCP_TOKEN, and stops on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockDrop } from '../adapters/guarded-agent.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist/cli/main.js');
const fixture = join(root, 'test/fixtures/mcp/server.mjs');
const AGENT = 'shared-gateway';
const TOKEN = 'listen-test-token-5f0c';

let guardServer: RunningServer;
beforeAll(async () => {
  guardServer = await startRealServer();
  await guardServer.client.initAgent({ agent_name: AGENT });
  await addControl(guardServer.client, AGENT, 'block-drop', blockDrop);
});
afterAll(() => guardServer.close());

function start(args: string[], env: Record<string, string> = {}) {
  const { GUARD_MCP_TOKEN: _unused, ...base } = process.env;
  const child = spawn(process.execPath, [cli, 'mcp-proxy', '--agent', AGENT, '--server', guardServer.url, ...args, '--', process.execPath, fixture], {
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const url = new Promise<string>((resolve, reject) => {
    child.stderr.on('data', () => {
      const found = /serving MCP at (\S+)/.exec(stderr);
      if (found) resolve(found[1]!);
    });
    void exit.then(() => reject(new Error(stderr)));
  });
  // Awaited only by the tests that expect it to serve.
  url.catch(() => undefined);
  return { child, exit, url, stderr: () => stderr };
}

describe('guardctl mcp-proxy --listen', () => {
  it('does not start without a way to authenticate clients, nor with --no-auth off loopback', async () => {
    const none = start(['--listen', '127.0.0.1:0']);
    expect(await none.exit).toBe(1);
    expect(none.stderr()).toContain('--listen needs a way to authenticate clients');
    const open = start(['--listen', '0.0.0.0:0', '--no-auth']);
    expect(await open.exit).toBe(1);
    expect(open.stderr()).toContain('--no-auth is allowed on a loopback address only');
  });

  it('serves clients holding GUARD_MCP_TOKEN, refuses others with 401, and exits 0 on SIGTERM', { timeout: 60_000 }, async () => {
    const gateway = start(['--listen', '127.0.0.1:0'], { GUARD_MCP_TOKEN: TOKEN });
    const url = await gateway.url;
    expect((await fetch(url, { method: 'POST' })).status).toBe(401);
    const client = new Client({ name: 'listen-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }));
    const ok = (await client.callTool({ name: 'run_sql', arguments: { query: 'select 1' } }, CallToolResultSchema)) as CallToolResult;
    expect(ok.content).toEqual([{ type: 'text', text: '3 rows for select 1' }]);
    const denied = (await client.callTool({ name: 'run_sql', arguments: { query: 'DROP TABLE orders' } }, CallToolResultSchema)) as CallToolResult;
    expect(denied.isError).toBe(true);
    await client.close();
    gateway.child.kill('SIGTERM');
    expect(await gateway.exit).toBe(0);
    expect(gateway.stderr()).toContain('SIGTERM: closing');
  });
});
