/**
 * Issue #34 item 12: what a hostile or broken MCP client or server tries against
 * `guardctl mcp-proxy`. The client here writes raw JSON-RPC lines (an SDK client would not
 * send them); the server is the fixture built with @modelcontextprotocol/sdk, made lenient
 * (MCP_FIXTURE_LENIENT=1: it folds case, width and invisible characters in tool names and
 * methods, and runs a tools/call sent as a notification) so that whatever the proxy lets
 * through really runs and shows in its log.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { blockDrop, denySecretOutput } from '../adapters/guarded-agent.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cli = join(root, 'dist/cli/main.js');
const fixture = join(root, 'test/fixtures/mcp/server.mjs');
const AGENT = 'gateway-bypass';

let guardServer: RunningServer;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-mcp-bypass-'));
  guardServer = await startRealServer();
  await guardServer.client.initAgent({ agent_name: AGENT });
  await addControl(guardServer.client, AGENT, 'block-drop', blockDrop);
  await addControl(guardServer.client, AGENT, 'deny-secret-output', denySecretOutput('sdk'));
});

afterAll(async () => {
  await guardServer.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Message {
  id?: unknown;
  result?: { content?: Array<{ text?: string }>; isError?: boolean };
  error?: { code: number; message: string };
}

/** The proxy spoken to line by line, as a hostile client would. */
class RawClient {
  readonly messages: Message[] = [];
  stdout = '';
  stderr = '';
  readonly exit: Promise<number | null>;
  #next = 100;
  #logStart = 0;
  constructor(readonly child: ChildProcessWithoutNullStreams, readonly log: string) {
    let buffered = '';
    child.stdout.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
      buffered += chunk.toString();
      for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
        this.messages.push(JSON.parse(buffered.slice(0, at)) as Message);
        buffered = buffered.slice(at + 1);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.exit = new Promise((resolve) => child.on('close', (code) => resolve(code)));
  }

  line(text: string): void {
    this.child.stdin.write(`${text}\n`);
  }

  send(message: object): void {
    this.line(JSON.stringify({ jsonrpc: '2.0', ...message }));
  }

  /** The answer to request `id` (ids compared with their type: 1 and "1" differ). */
  async answer(id: unknown): Promise<Message> {
    await expect.poll(() => this.messages.some((m) => m.id === id), { timeout: 30_000 }).toBe(true);
    return this.messages.find((m) => m.id === id)!;
  }

  async call(name: string, args?: unknown, id: unknown = this.#next++): Promise<Message> {
    this.send({ id, method: 'tools/call', params: args === undefined ? { name } : { name, arguments: args } });
    return this.answer(id);
  }

  /** What reached the MCP server since the last begin(). */
  reached(): string {
    return readFileSync(this.log, 'utf8').slice(this.#logStart);
  }

  /** Sets aside what earlier tests sent and were sent: the test that calls it sees only its own. */
  begin(): this {
    this.messages.length = 0;
    this.stdout = '';
    this.stderr = '';
    this.#logStart = readFileSync(this.log, 'utf8').length;
    return this;
  }
}

const running: RawClient[] = [];
afterEach(() => {
  for (const c of running.splice(0)) c.child.kill('SIGKILL');
});

/** A proxy of its own, ended after the test: for a test that needs other flags or ends it. */
async function start(extra: string[] = [], env: Record<string, string> = {}): Promise<RawClient> {
  const client = await launch(extra, env);
  running.push(client);
  return client;
}

// The tests that leave the proxy as they found it (every call answered, the process running)
// share one: each proxy costs two Node processes, about 1.5 CPU-seconds.
let shared: RawClient | undefined;
async function reused(): Promise<RawClient> {
  shared ??= await launch();
  return shared.begin();
}
afterAll(() => {
  shared?.child.kill('SIGKILL');
});

let seq = 0;
async function launch(extra: string[] = [], env: Record<string, string> = {}): Promise<RawClient> {
  const log = join(dir, `calls-${++seq}.log`);
  const ready = join(dir, `ready-${seq}`);
  writeFileSync(log, '');
  const child = spawn(process.execPath, [cli, 'mcp-proxy', '--agent', AGENT, '--server', guardServer.url, '--pass-env', 'MCP_FIXTURE_LOG,MCP_FIXTURE_LENIENT,MCP_FIXTURE_FLOOD_BYTES,MCP_FIXTURE_READY', ...extra, '--', process.execPath, fixture], {
    env: { ...process.env, MCP_FIXTURE_LOG: log, MCP_FIXTURE_LENIENT: '1', MCP_FIXTURE_READY: ready, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const client = new RawClient(child, log);
  // The MCP server runs before the first request: a short --request-timeout never covers its start.
  await expect.poll(() => existsSync(ready), { interval: 20 }).toBe(true);
  client.send({ id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  await client.answer(0);
  client.send({ method: 'notifications/initialized' });
  return client;
}

const textOf = (m: Message): string => (m.result?.content ?? []).map((c) => c.text ?? '').join('');
const refused = (m: Message): boolean => m.error !== undefined || m.result?.isError === true;

describe('tool names are compared exactly as the server declared them', () => {
  it('runs a declared name, and refuses every other spelling before it reaches the server', async () => {
    const client = await reused();
    expect(textOf(await client.call('run_sql', { query: 'select 1' }))).toBe('3 rows for select 1');
    const spellings = ['RUN_SQL', 'Run_Sql', 'run_sql ', ' run_sql', 'run_sql\t', 'run_sql\u00a0', 'run_sql\u200b', '\ufeffrun_sql', 'run_sql\u2060', 'run_\u017fql', '\uff32\uff35\uff2e\uff3f\uff33\uff31\uff2c'];
    for (const name of spellings) {
      const answer = await client.call(name, { query: `DROP TABLE orders -- ${spellings.indexOf(name)}` });
      // Answered as MCP servers answer an unknown tool: a tool error.
      expect(answer.result?.isError, JSON.stringify(name)).toBe(true);
      expect(JSON.stringify(answer.result)).toContain('not a tool the MCP server declared');
    }
    expect(client.reached()).not.toContain('DROP');
    // The exact name is the step name: the control scoped to run_sql still denies.
    const denied = await client.call('run_sql', { query: 'DROP TABLE orders' });
    expect(denied.result?.isError).toBe(true);
    expect(client.reached()).not.toContain('DROP');
  });

  it('refuses a tools/call under another spelling of its method', async () => {
    const client = await reused();
    for (const [i, method] of ['Tools/Call', 'TOOLS/CALL', 'tools/call ', 'tools/call\u200b', '\uff54ools/call'].entries()) {
      client.send({ id: `m${i}`, method, params: { name: 'run_sql', arguments: { query: `DROP TABLE orders ${i}` } } });
      expect(refused(await client.answer(`m${i}`)), method).toBe(true);
    }
    expect(client.reached()).not.toContain('DROP');
  });
});

describe('a tools/call with no answer to check', () => {
  it('never forwards a tools/call sent as a notification', async () => {
    const client = await reused();
    client.send({ method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'DROP TABLE orders' } } });
    client.send({ method: 'TOOLS/CALL', params: { name: 'run_sql', arguments: { query: 'DROP TABLE customers' } } });
    client.send({ id: null, method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'DROP TABLE invoices' } } });
    // A request sent after them is answered after them: by then they were handled.
    expect(textOf(await client.call('run_sql', { query: 'select 5' }))).toBe('3 rows for select 5');
    expect(client.reached()).toContain('select 5');
    expect(client.reached()).not.toContain('DROP');
    expect(client.stderr).toMatch(/dropped a tools\/call sent as a notification/);
  });

  it('never forwards a batch (an array of messages) unchecked', async () => {
    const client = await reused();
    client.line(JSON.stringify([
      { jsonrpc: '2.0', id: 'b1', method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'DROP TABLE orders' } } },
      { jsonrpc: '2.0', method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'DROP TABLE customers' } } },
    ]));
    expect((await client.answer('b1')).error?.message).toContain('batches are not relayed');
    expect(textOf(await client.call('run_sql', { query: 'select 6' }))).toBe('3 rows for select 6');
    expect(client.reached()).not.toContain('DROP');
  });
});

describe('request ids', () => {
  it('refuses a request whose id is already pending, so an answer is never checked as another request\'s', async () => {
    const client = await reused();
    client.send({ id: 7, method: 'tools/call', params: { name: 'wait_keys', arguments: {} } });
    await expect.poll(() => client.reached()).toContain('wait_keys');
    // The same id on a request whose answer is not checked, then the same id as a string.
    client.send({ id: 7, method: 'prompts/get', params: { name: 'wait' } });
    client.send({ id: '7', method: 'prompts/get', params: { name: 'wait' } });
    await expect.poll(() => client.messages.filter((m) => m.id === 7 || m.id === '7').length).toBeGreaterThanOrEqual(2);
    const early = client.messages.filter((m) => m.id === 7 || m.id === '7');
    expect(early.every((m) => m.error?.message.includes('already pending'))).toBe(true);
    await client.call('release', {});
    await expect.poll(() => client.messages.filter((m) => m.id === 7).length).toBe(2);
    expect(client.stdout).not.toContain('AKIA');
    expect(client.messages.filter((m) => m.id === 7).at(-1)!.result?.isError).toBe(true);
  });

  it('takes ids that differ by width or invisible characters for the pending one (issue #36 item 3)', async () => {
    const client = await reused();
    client.send({ id: 1, method: 'tools/call', params: { name: 'wait_keys', arguments: {} } });
    await expect.poll(() => client.reached()).toContain('wait_keys');
    const variants = ['1\u200b', '\uff11', '\u200b1', '1\u2060', '\ufeff1', '1\u00ad', ' \uff11 ', '\u{1d7cf}', '1\u180e'];
    for (const id of variants) {
      const answer = await client.answer((client.send({ id, method: 'prompts/get', params: { name: 'wait' } }), id));
      expect(answer.error?.message, JSON.stringify(id)).toContain('already pending');
    }
    await client.call('release', {});
    await expect.poll(() => client.messages.filter((m) => m.id === 1).length).toBe(1);
    expect(client.stdout).not.toContain('AKIA');
  });

  it('never takes a late answer of a timed-out call for a new request that reuses its id', async () => {
    // The MCP server is running before the first request (launch waits for it), so the bound
    // covers answers of a running process only: 2 s is far above them on a loaded machine.
    const client = await start(['--request-timeout', '2s']);
    // The proxy reads the server's tools first (its own tools/list, under the same timeout).
    expect(textOf(await client.call('run_sql', { query: 'select 8' }))).toBe('3 rows for select 8');
    client.send({ id: 9, method: 'tools/call', params: { name: 'wait_keys', arguments: {} } });
    expect((await client.answer(9)).error?.message).toContain('did not answer');
    client.send({ id: 9, method: 'prompts/get', params: { name: 'wait' } });
    await expect.poll(() => client.reached()).toContain('wait_keys');
    await client.call('release', {});
    await expect.poll(() => client.messages.filter((m) => m.id === 9).length).toBe(2);
    expect(client.stdout).not.toContain('AKIA');
  });
});

describe('a tools/call without arguments', () => {
  it('is checked and forwarded (issue #35 item 2)', async () => {
    const client = await reused();
    const answer = await client.call('image');
    expect(answer.error).toBeUndefined();
    expect(answer.result?.isError).toBeFalsy();
  });
});

describe('what the server sends besides a result (issue #36 item 1)', () => {
  const KEY = 'AKIAQWERTYUIOPASDF7Z';
  /** Everything the client was sent once a later call is answered (checks run in order of arrival). */
  async function settled(client: RawClient): Promise<string> {
    await client.call('run_sql', { query: 'select 1' });
    return client.stdout;
  }

  it('checks a JSON-RPC error answer (message and data) as the call\'s output', async () => {
    const client = await reused();
    for (const how of ['error', 'error_data']) {
      const answer = await client.call('leak', { how });
      expect(refused(answer)).toBe(true);
      expect(JSON.stringify(answer)).not.toContain(KEY);
    }
    expect(await settled(client)).not.toContain(KEY);
    expect(client.stderr).not.toContain(KEY);
  });

  it('withholds a log or progress notification holding a guarded value while a call is pending', async () => {
    const client = await reused();
    expect(textOf(await client.call('leak', { how: 'log' }))).toBe('done');
    client.send({ id: 'p', method: 'tools/call', params: { name: 'leak', arguments: { how: 'progress' }, _meta: { progressToken: 'tok' } } });
    expect(textOf(await client.answer('p'))).toBe('done');
    expect(await settled(client)).not.toContain(KEY);
    expect(client.stderr).toMatch(/withheld a "notifications\/message" notification/);
    expect(client.stderr).toMatch(/withheld a "notifications\/progress" notification/);
    expect(client.stderr).not.toContain(KEY);
  });

  it('relays an error answer and a log notification that hold nothing guarded', async () => {
    const client = await reused();
    expect(textOf(await client.call('leak', { how: 'clean_log' }))).toBe('done');
    await expect.poll(() => client.stdout.includes('nothing secret'), { timeout: 30_000 }).toBe(true);
    expect((await client.call('leak', { how: 'clean_error' })).error).toEqual({ code: -32000, message: 'no such table' });
  });
});

describe('tools/call arguments that are not an object (issue #36 item 2)', () => {
  it('refuses them with -32602 and never forwards them', async () => {
    const client = await reused();
    const drop = { query: 'DROP TABLE orders' };
    const shapes: unknown[] = [JSON.stringify(drop), [drop], [[drop]], 'DROP TABLE orders', 42, true, null];
    for (const args of shapes) {
      const answer = await client.call('run_sql', args);
      expect(answer.error?.code).toBe(-32602);
    }
    // A call with no arguments and one with an object still run.
    expect(textOf(await client.call('run_sql', { query: 'select 2' }))).toBe('3 rows for select 2');
    expect((await client.call('image')).error).toBeUndefined();
    expect(client.reached()).not.toMatch(/drop/i);
  });
});

describe('an MCP server line larger than the proxy reads', () => {
  it('answers the pending calls with an error, says why on stderr and goes on', async () => {
    const client = await start();
    const answer = await client.call('flood', {});
    expect(answer.error?.message).toMatch(/larger than 64 MiB/);
    expect(client.stderr).toMatch(/a message of the MCP server is larger than 64 MiB/);
    expect(textOf(await client.call('run_sql', { query: 'select 7' }))).toBe('3 rows for select 7');
    client.child.stdin.end();
    expect(await client.exit).toBe(0);
  }, 60_000);
});

describe('the client going away', () => {
  it('exits 0 when its stdin closes, with a call pending, and ends the MCP server', async () => {
    const client = await start();
    client.send({ id: 11, method: 'tools/call', params: { name: 'wait_keys', arguments: {} } });
    await expect.poll(() => client.reached()).toContain('wait_keys');
    client.child.stdin.end();
    expect(await client.exit).toBe(0);
  });
});

describe('an agent with no controls (issue #34 item 10)', () => {
  function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [cli, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  it('does not start for a misspelt --agent: exit 1, naming the agent and the one meant', async () => {
    const result = await run(['mcp-proxy', '--agent', 'gateway-bypas', '--server', guardServer.url, '--', process.execPath, fixture]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('agent "gateway-bypas" has no controls');
    expect(result.stderr).toContain('did you mean --agent gateway-bypass?');
    expect(result.stderr).toContain('--allow-unguarded');
    expect(result.stdout).toBe('');
    expect((await guardServer.client.listAgents()).map((a) => a.agent_name)).not.toContain('gateway-bypas');
  });

  it('starts with --allow-unguarded, and says on stderr that nothing is checked', async () => {
    const log = join(dir, 'unguarded.log');
    writeFileSync(log, '');
    const child = spawn(process.execPath, [cli, 'mcp-proxy', '--agent', 'brand-new-agent', '--allow-unguarded', '--server', guardServer.url, '--pass-env', 'MCP_FIXTURE_LOG', '--', process.execPath, fixture], {
      env: { ...process.env, MCP_FIXTURE_LOG: log },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const client = new RawClient(child, log);
    running.push(client);
    client.send({ id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    await client.answer(0);
    expect(textOf(await client.call('run_sql', { query: 'select 9' }))).toBe('3 rows for select 9');
    expect(client.stderr).toContain('agent "brand-new-agent" has no controls in force');
  });
});
