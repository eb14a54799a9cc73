/**
 * The gateway and the MCP server process it starts (issue #39 item 5): the server gets
 * only the environment the operator lists, closing the gateway ends the server and what
 * it started, and a task's result fetched through `tasks/result` is checked like the
 * call's (the reference "everything" server from npm runs the task).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { upstreamEnv } from '../../src/adapters/mcp-env.js';
import { startMcpProxy, type McpProxy, type McpUpstream } from '../../src/adapters/mcp.js';
import { ControlDataSchema, type ControlRecord } from '../../src/model/index.js';
import { GuardAgent } from '../../src/sdk/index.js';
import { quietLogger } from './guarded-agent.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const fixture = join(root, 'test/fixtures/mcp/server.mjs');
const everything = join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

const record = (id: number, name: string, data: unknown): ControlRecord => ({
  control_id: id, name, enabled: true, managed_by: null, source: null, created_at: '', updated_at: '',
  data: ControlDataSchema.parse(data),
});
const controls = [
  record(1, 'no-forbidden-research', {
    execution: 'sdk', scope: { step_types: ['tool'], stages: ['pre'] }, selector: { path: 'input.topic' },
    evaluator: { name: 'regex', config: { pattern: 'forbidden' } }, action: { decision: 'deny' },
  }),
  record(2, 'no-keys-out', {
    execution: 'sdk', scope: { stages: ['post'] }, selector: { path: 'output' },
    evaluator: { name: 'regex', config: { pattern: 'AKIA[0-9A-Z]{16}' } }, action: { decision: 'deny' },
  }),
];

let dir: string;
beforeAll(() => void (dir = mkdtempSync(join(tmpdir(), 'guardctl-mcp-process-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const open: Array<{ proxy: McpProxy; client: Client; guard: GuardAgent }> = [];
afterEach(async () => {
  for (const { proxy, client, guard } of open.splice(0)) {
    await client.close().catch(() => undefined);
    await proxy.close();
    await guard.shutdown();
  }
});

async function connect(upstream: McpUpstream, capabilities = {}) {
  const guard = new GuardAgent({ agentName: 'process-test', serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, controls);
  const [clientSide, proxySide] = InMemoryTransport.createLinkedPair();
  const reports: string[] = [];
  const proxy = await startMcpProxy({ guard, upstream, client: proxySide, report: (l) => reports.push(l) });
  const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities });
  await client.connect(clientSide);
  open.push({ proxy, client, guard });
  return { proxy, client, reports };
}

const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : `[${c.type}]`)).join('');

describe("the MCP server's environment", () => {
  it('holds PATH and what the operator lists, never the guard\'s key or anything else', () => {
    const env = upstreamEnv({ PATH: '/bin', HOME: '/h', GUARD_API_KEY: 'k', AWS_SECRET_ACCESS_KEY: 's', GITHUB_TOKEN: 'g' }, ['GITHUB_TOKEN'], { MODE: 'ro' });
    expect(env).toEqual({ PATH: '/bin', HOME: '/h', GITHUB_TOKEN: 'g', MODE: 'ro' });
  });

  it('a started server cannot read GUARD_API_KEY back', async () => {
    process.env.GUARD_API_KEY = 'guard-key-the-server-must-not-see';
    process.env.FIXTURE_PASSED = 'listed';
    try {
      const { client } = await connect({ command: process.execPath, args: [fixture], passEnv: ['FIXTURE_PASSED'] });
      const call = async (name: string) => textOf((await client.callTool({ name: 'env', arguments: { name } }, CallToolResultSchema)) as CallToolResult);
      expect(await call('GUARD_API_KEY')).toBe('(unset)');
      expect(await call('FIXTURE_PASSED')).toBe('listed');
      expect(await call('PATH')).toBe(process.env.PATH);
    } finally {
      delete process.env.GUARD_API_KEY;
      delete process.env.FIXTURE_PASSED;
    }
  });
});

describe('closing the gateway', () => {
  it('ends the server and what it started, even when they ignore the end of their input', async () => {
    const pidFile = join(dir, 'grandchild.pid');
    // A wrapper (as npx is) whose child ignores stdin's end and keeps a timer running.
    const child = `process.stdin.resume(); setInterval(() => {}, 1000); require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(process.pid))`;
    const guard = new GuardAgent({ agentName: 'process-test', serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, controls);
    const [, proxySide] = InMemoryTransport.createLinkedPair();
    const proxy = await startMcpProxy({ guard, upstream: { command: '/bin/sh', args: ['-c', `"${process.execPath}" -e "${child.replace(/"/g, '\\"')}"; wait`] }, client: proxySide, report: () => undefined });
    await expect.poll(() => { try { return readFileSync(pidFile, 'utf8'); } catch { return ''; } }, { timeout: 10_000 }).not.toBe('');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    const started = Date.now();
    await proxy.close();
    await guard.shutdown();
    expect(Date.now() - started).toBeLessThan(5000);
    expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('tasks through the gateway (server-everything)', () => {
  it('checks a task-augmented call before it starts, and its result from tasks/result after', { timeout: 40_000 }, async () => {
    const { client } = await connect({ command: process.execPath, args: [everything, 'stdio'] });
    const run = async (topic: string) => {
      const seen: string[] = [];
      let result: CallToolResult | undefined;
      let error: unknown;
      for await (const message of client.experimental.tasks.callToolStream({ name: 'simulate-research-query', arguments: { topic } }, CallToolResultSchema, { task: { ttl: 60_000 } })) {
        seen.push(message.type);
        if (message.type === 'result') result = message.result;
        if (message.type === 'error') error = message.error;
      }
      return { seen, result, error };
    };
    const allowed = await run('tide tables');
    expect(allowed.seen).toContain('taskCreated');
    expect(textOf(allowed.result!)).toContain('Research Report: tide tables');
    // The result holds the topic: a key in it is withheld when tasks/result fetches it.
    const leaked = await run('AKIAIOSFODNN7EXAMPLE');
    expect(leaked.seen).toContain('taskCreated');
    expect(leaked.result?.isError).toBe(true);
    expect(JSON.stringify(leaked)).not.toContain('Research Report: AKIA');
    // Refused before a task exists: the client reads an error where it awaited its task.
    const denied = await run('forbidden lore');
    expect(denied.seen).toEqual(['error']);
  });
});
