/**
 * `guardctl mcp-proxy` as an MCP client sees it: the real @modelcontextprotocol/sdk Client
 * over stdio starts the built proxy, which starts a real MCP server process
 * (test/fixtures/mcp/server.mjs) and checks tool calls against a real guard server.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolResultSchema, ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { blockDrop, denySecretOutput } from '../adapters/guarded-agent.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist/cli/main.js');
const fixture = join(root, 'test/fixtures/mcp/server.mjs');
const AGENT = 'desktop-assistant';

let guardServer: RunningServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-mcp-'));
  guardServer = await startRealServer();
  const { client } = guardServer;
  await client.initAgent({ agent_name: AGENT });
  await addControl(client, AGENT, 'block-drop', blockDrop);
  await addControl(client, AGENT, 'steer-unbounded-delete', {
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)^\\s*delete\\s+from\\s+\\w+\\s*$' } },
    action: { decision: 'steer', steering_context: { message: 'Deletes need a WHERE clause.', required_actions: ['add a WHERE clause naming the rows'] } },
  });
  await addControl(client, AGENT, 'deny-secret-output', denySecretOutput('sdk'));
  // Checked on the guard server: a 10 MB result is more than it accepts (GUARD_BODY_LIMIT_BYTES).
  await addControl(client, AGENT, 'server-checks-exports', {
    scope: { step_types: ['tool'], step_names: ['export'], stages: ['post'] },
    selector: { path: 'output' },
    evaluator: { name: 'regex', config: { pattern: 'confidential' } },
    action: { decision: 'deny' },
  });
  await addControl(client, AGENT, 'no-images-from-the-database', {
    scope: { step_types: ['tool'], step_names: ['image'], stages: ['pre'] },
    selector: { path: 'context.mcp_server' },
    evaluator: { name: 'list', config: { values: ['fixture-db'] } },
    action: { decision: 'deny' },
  });
});

afterAll(async () => {
  await guardServer.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Proxied {
  client: Client;
  transport: StdioClientTransport;
  stderr: () => string;
  log: string;
}

const running: Proxied[] = [];
afterEach(async () => {
  for (const p of running.splice(0)) await p.client.close().catch(() => undefined);
});

let seq = 0;
async function connect(extra: string[] = [], upstream: string[] = ['--', process.execPath, fixture]): Promise<Proxied> {
  const log = join(dir, `calls-${++seq}.log`);
  writeFileSync(log, '');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp-proxy', '--agent', AGENT, '--server', guardServer.url, '--pass-env', 'MCP_FIXTURE_LOG', ...extra, ...upstream],
    env: { ...(process.env as Record<string, string>), MCP_FIXTURE_LOG: log },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(transport);
  const proxied = { client, transport, stderr: () => err, log };
  running.push(proxied);
  return proxied;
}

async function call(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args }, CallToolResultSchema)) as CallToolResult;
}

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('');

describe('guardctl mcp-proxy in front of a stdio MCP server', () => {
  // The well-behaved cases share one proxy (each one costs two process starts).
  let shared: Proxied;
  beforeAll(async () => {
    shared = await connect();
    running.splice(running.indexOf(shared), 1);
  });
  afterAll(async () => {
    await shared.client.close();
  });

  it('passes through everything but tools/call: initialize, tools, resources, prompts, progress', async () => {
    const { client } = shared;
    expect(client.getServerVersion()).toMatchObject({ name: 'fixture-db' });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['run_sql', 'slow', 'big', 'image', 'crash', 'hang', 'garble']));
    const resource = await client.readResource({ uri: 'db://schema' });
    expect(resource.contents[0]).toMatchObject({ text: 'CREATE TABLE orders (id int)' });
    const prompt = await client.getPrompt({ name: 'summarise', arguments: { table: 'orders' } });
    expect(prompt.messages[0]!.content).toMatchObject({ text: 'Summarise orders' });
    const progress: number[] = [];
    const slow = (await client.callTool({ name: 'slow', arguments: { steps: 3 } }, CallToolResultSchema, {
      onprogress: (p) => progress.push(p.progress),
    })) as CallToolResult;
    expect(textOf(slow)).toBe('done in 3 steps');
    expect(progress).toEqual([1, 2, 3]);
  });

  it('allows, denies and steers tool calls; denied calls never reach the server', async () => {
    const { client, log } = shared;
    const allowed = await call(client, 'run_sql', { query: 'select 1' });
    expect(allowed.isError).toBeFalsy();
    expect(textOf(allowed)).toBe('3 rows for select 1');

    const denied = await call(client, 'run_sql', { query: 'DROP TABLE orders' });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toMatch(/^Blocked: this call was not run/);

    const steered = await call(client, 'run_sql', { query: 'DELETE FROM orders' });
    expect(steered.isError).toBe(true);
    expect(textOf(steered)).toContain('Deletes need a WHERE clause.');
    expect(textOf(steered)).toContain('- add a WHERE clause naming the rows');

    const reached = readFileSync(log, 'utf8');
    expect(reached).toContain('select 1');
    expect(reached).not.toMatch(/DROP|DELETE/);
  });

  it('checks results: a secret in the output is withheld', async () => {
    const { client, log } = shared;
    const result = await call(client, 'run_sql', { query: 'select keys' });
    expect(readFileSync(log, 'utf8')).toContain('select keys');
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result)).not.toContain('AKIA');
  });

  it('gives steps the server name as context.mcp_server', async () => {
    const { client } = shared;
    const result = await call(client, 'image');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('Blocked');
  });

  it('carries 10 MB results and binary content', async () => {
    const { client } = await connect(['--mcp-server-name', 'elsewhere']);
    const big = await call(client, 'big');
    expect(textOf(big)).toHaveLength(10_000_000);
    const image = await call(client, 'image');
    expect(image.isError).toBeFalsy();
    expect(image.content[0]).toEqual({ type: 'image', mimeType: 'image/png', data: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255, 254]).toString('base64') });
  });

  it('withholds a result the guard server cannot check (larger than it accepts), and says why on stderr', async () => {
    const { client, stderr } = shared;
    const result = await call(client, 'export');
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('could not check the result');
    // The guard server reads the whole over-limit body and answers 413, naming its limit.
    expect(stderr()).toMatch(/could not check tools\/call "export" \(post\), so it was refused: the server refused to check step "export" \(post\): HTTP 413: .*GUARD_BODY_LIMIT_BYTES, 1048576 bytes/);
  });

  it('survives arguments that are not objects', async () => {
    const { client } = shared;
    for (const args of ['DROP TABLE orders', 42, null, [1, 2]]) {
      const answer = await client.request({ method: 'tools/call', params: { name: 'run_sql', arguments: args as never } }, CallToolResultSchema).catch((e: unknown) => e);
      // The server refuses them (or the call fails as a tool error); the proxy answers either way.
      expect(answer instanceof McpError || (answer as CallToolResult).isError === true).toBe(true);
    }
    expect(textOf(await call(client, 'run_sql', { query: 'select 2' }))).toBe('3 rows for select 2');
  });

  it('answers a call the server never answers with a timeout error, and goes on', async () => {
    // The client connects once the MCP server runs (the fixture writes MCP_FIXTURE_READY), so the
    // bound covers answers of a running process only: 2 s is far above them on a loaded machine.
    const ready = join(dir, 'hang-ready');
    const proxy = spawn(process.execPath, [cli, 'mcp-proxy', '--agent', AGENT, '--server', guardServer.url, '--request-timeout', '2s', '--pass-env', 'MCP_FIXTURE_READY', '--', process.execPath, fixture], {
      env: { ...process.env, MCP_FIXTURE_READY: ready },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    proxy.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exit = new Promise<number | null>((resolve) => proxy.on('close', (code) => resolve(code)));
    try {
      await expect.poll(() => existsSync(ready), { interval: 20 }).toBe(true);
      const client = new Client({ name: 'test-client', version: '1.0.0' });
      await client.connect(new StdioServerTransport(proxy.stdout, proxy.stdin));
      const error = await call(client, 'hang').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(ErrorCode.RequestTimeout);
      expect(stderr).toContain('did not answer tools/call');
      expect(textOf(await call(client, 'run_sql', { query: 'select 3' }))).toBe('3 rows for select 3');
      await client.close();
    } finally {
      proxy.stdin.end();
      await exit;
    }
  });

  it('answers pending calls with an error when the server sends malformed JSON-RPC, and reports it', async () => {
    // On the shared proxy, after the other tests that use it: it goes on after the bad line.
    const { client, stderr } = shared;
    const error = await call(client, 'garble').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).message).toContain('malformed JSON-RPC');
    expect(stderr()).toContain('not JSON-RPC');
    expect(textOf(await call(client, 'run_sql', { query: 'select 4' }))).toBe('3 rows for select 4');
  });

  it('answers pending calls with an error when the server crashes, then exits non-zero', async () => {
    // Spawned by hand to read its exit code; the client speaks line-delimited JSON-RPC over its pipes.
    const proxy = spawn(process.execPath, [cli, 'mcp-proxy', '--agent', AGENT, '--server', guardServer.url, '--', process.execPath, fixture], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    proxy.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exit = new Promise<number | null>((resolve) => proxy.on('close', (code) => resolve(code)));
    const client = new Client({ name: 'test-client', version: '1.0.0' });
    await client.connect(new StdioServerTransport(proxy.stdout, proxy.stdin));
    const error = await call(client, 'crash').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).message).toMatch(/exited/);
    expect(await exit).toBe(1);
    expect(stderr).toContain('the MCP server exited');
    await client.close();
  });

  it('fails closed when the guard server is down: calls are refused, not passed', async () => {
    const down = await startRealServer();
    await down.client.initAgent({ agent_name: AGENT });
    await addControl(down.client, AGENT, 'steer-unbounded-delete', {
      scope: { step_types: ['tool'], stages: ['pre'] },
      selector: { path: 'input' },
      evaluator: { name: 'regex', config: { pattern: 'delete' } },
      action: { decision: 'steer', steering_context: { message: 'no' } },
    });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, 'mcp-proxy', '--agent', AGENT, '--server', down.url, '--', process.execPath, fixture],
      stderr: 'pipe',
    });
    const client = new Client({ name: 'test-client', version: '1.0.0' });
    await client.connect(transport);
    running.push({ client, transport, stderr: () => '', log: '' });
    await down.close();
    const result = await call(client, 'run_sql', { query: 'select 1' });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('could not check this call');
  });
});

describe('guardctl mcp-proxy --upstream-url (streamable HTTP)', () => {
  it('guards a streamable-HTTP MCP server', async () => {
    const server = spawn(process.execPath, [fixture], { env: { ...process.env, MCP_FIXTURE_HTTP_PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        server.stderr.on('data', (chunk: Buffer) => {
          const m = /listening on (\d+)/.exec(chunk.toString());
          if (m) resolve(Number(m[1]));
        });
        server.once('exit', () => reject(new Error('the HTTP fixture exited')));
      });
      const { client } = await connect([], ['--upstream-url', `http://127.0.0.1:${port}/mcp`]);
      expect((await client.listTools()).tools.length).toBeGreaterThan(3);
      expect(textOf(await call(client, 'run_sql', { query: 'select 1' }))).toBe('3 rows for select 1');
      const denied = await call(client, 'run_sql', { query: 'DROP TABLE orders' });
      expect(denied.isError).toBe(true);
      const progress: number[] = [];
      await client.callTool({ name: 'slow', arguments: { steps: 2 } }, CallToolResultSchema, { onprogress: (p) => progress.push(p.progress) });
      expect(progress).toEqual([1, 2]);
    } finally {
      server.kill();
    }
  });
});
