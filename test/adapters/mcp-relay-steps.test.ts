/**
 * What the stdio gateway got wrong (issue #39 item 5), driven with the MCP SDK's own client
 * and server over its in-memory transports: resources/read and prompts/get are steps
 * (`type: resource` / `prompt`), a task's result is checked as its call's output, the
 * request timeout is restarted by progress and cancels the call on the server.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolResultSchema, ErrorCode, GetPromptResultSchema, McpError, ReadResourceResultSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { McpRelay } from '../../src/adapters/mcp-relay.js';
import { ControlDataSchema, type ControlDataInput, type ControlRecord } from '../../src/model/index.js';
import { GuardAgent } from '../../src/sdk/index.js';
import { quietLogger } from './guarded-agent.js';

let nextId = 1;
function sdkControl(name: string, data: ControlDataInput): ControlRecord {
  return {
    control_id: nextId++, name, enabled: true, managed_by: null, source: null, created_at: '', updated_at: '',
    data: ControlDataSchema.parse({ execution: 'sdk', ...data }),
  };
}

const controls = [
  sdkControl('no-secrets-resource', {
    scope: { step_types: ['resource'], step_names: ['db://secrets'], stages: ['pre'] },
    selector: { path: 'input.uri' },
    evaluator: { name: 'regex', config: { pattern: 'secrets' } },
    action: { decision: 'deny', message: 'That resource is off limits.' },
  }),
  sdkControl('no-keys-out', {
    scope: { stages: ['post'] },
    selector: { path: 'output' },
    evaluator: { name: 'regex', config: { pattern: 'AKIA[0-9A-Z]{16}' } },
    action: { decision: 'deny' },
  }),
  sdkControl('no-admin-prompt', {
    scope: { step_types: ['prompt'], stages: ['pre'] },
    selector: { path: 'input.role' },
    evaluator: { name: 'list', config: { values: ['admin'] } },
    action: { decision: 'deny', message: 'Prompts for admins are not available.' },
  }),
  // A tool control of the same name never applies to the resource, nor the other way round.
  sdkControl('tool-only', {
    scope: { step_types: ['tool'], step_names: ['db://public'] },
    selector: { path: 'input' },
    evaluator: { name: 'regex', config: { pattern: '.' } },
    action: { decision: 'deny' },
  }),
];

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function setup(requestTimeoutMs = 0) {
  const server = new McpServer({ name: 'in-memory', version: '1.0.0' });
  const aborted: string[] = [];
  server.registerResource('public', 'db://public', {}, (uri) => ({ contents: [{ uri: uri.href, text: 'orders, customers' }] }));
  server.registerResource('secrets', 'db://secrets', {}, (uri) => ({ contents: [{ uri: uri.href, text: 'never read' }] }));
  server.registerResource('keys', 'db://keys', {}, (uri) => ({ contents: [{ uri: uri.href, text: 'aws AKIAIOSFODNN7EXAMPLE' }] }));
  server.registerPrompt('brief', { argsSchema: { role: z.string() } }, ({ role }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: role === 'keys' ? 'use AKIAIOSFODNN7EXAMPLE' : `brief for ${role}` } }],
  }));
  server.registerTool('slow', { inputSchema: { ms: z.number() } }, async ({ ms }, extra) => {
    const token = extra._meta?.progressToken;
    for (let done = 0; done < ms; done += 40) {
      await new Promise((r) => setTimeout(r, 40));
      if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: done + 40, total: ms } });
    }
    return { content: [{ type: 'text', text: 'finished' }] };
  });
  server.registerTool('hang', {}, (extra) => new Promise(() => extra.signal.addEventListener('abort', () => aborted.push(String(extra.requestId)))));

  const [clientSide, relayClientSide] = InMemoryTransport.createLinkedPair();
  const [relayServerSide, serverSide] = InMemoryTransport.createLinkedPair();
  const seenByServer: JSONRPCMessage[] = [];
  const guard = new GuardAgent({ agentName: 'relay-steps', serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, controls);
  const reports: string[] = [];
  const relay = new McpRelay({ guard, client: relayClientSide, server: relayServerSide, serverName: 'in-memory', serverNameFixed: false, requestTimeoutMs, report: (l) => reports.push(l) });
  relayClientSide.onmessage = (m) => relay.fromClient(m);
  relayServerSide.onmessage = (m) => relay.fromServer(m);
  await relayClientSide.start();
  await relayServerSide.start();
  await server.connect(serverSide);
  const deliver = serverSide.onmessage!;
  serverSide.onmessage = (m, extra) => {
    seenByServer.push(m);
    deliver(m, extra);
  };
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(clientSide);
  closers.push(async () => {
    relay.close();
    await client.close();
    await server.close();
    await guard.shutdown();
  });
  const sawMethod = (method: string) => seenByServer.filter((m) => 'method' in m && m.method === method);
  return { client, relay, sawMethod, aborted, reports };
}

describe('resources/read and prompts/get are steps', () => {
  it('reads an allowed resource unchanged; a tool control of the same name does not apply', async () => {
    const { client } = await setup();
    const read = await client.readResource({ uri: 'db://public' });
    expect(read.contents).toEqual([{ uri: 'db://public', text: 'orders, customers' }]);
  });

  it('refuses a denied resource before the server reads it, with the control\'s message', async () => {
    const { client, sawMethod } = await setup();
    const error = await client.readResource({ uri: 'db://secrets' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(ErrorCode.InvalidRequest);
    expect((error as McpError).message).toMatch(/^MCP error -32600: Blocked/);
    expect(sawMethod('resources/read')).toHaveLength(0);
  });

  it('refuses a resource URI the server would read as another (case, a tab, spaces, dot segments) before the server sees it', async () => {
    const { client, sawMethod } = await setup();
    // The MCP SDK's server looks a resource up by new URL(uri).href: each of these reads db://secrets.
    // A percent-encoded letter, digit, '-', '.', '_' or '~' is that character to a server that decodes the path (fileURLToPath, unquote).
    for (const uri of ['DB://secrets', 'db://sec\trets', ' db://secrets', 'db://secrets/x/..', 'db://%73ecrets', 'db://secret%73', 'db://secrets%2e', 'db://secrets%7E']) {
      const error = await client.request({ method: 'resources/read', params: { uri } }, ReadResourceResultSchema).catch((e: unknown) => e);
      expect(error, JSON.stringify(uri)).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(ErrorCode.InvalidParams);
      expect(JSON.stringify(error)).not.toContain('never read');
    }
    expect(sawMethod('resources/read')).toHaveLength(0);
  });

  it('refuses a resource URI with a dot segment behind an encoded slash or a backslash, which a server decoding the path resolves', async () => {
    const { client, sawMethod } = await setup();
    // A server that decodes the path (unquote, decodeURIComponent) and opens it reads db://secrets/x%2F.. as db://secrets.
    for (const uri of ['db://secrets/x%2F..', 'db://secrets/x%2f..%2f', 'db://public/..%2F..%2Fsecrets', 'db://secrets/x\\..', 'db://secrets/x%5C.', 'file:///data/x%2F..%2Fsecrets']) {
      const error = await client.request({ method: 'resources/read', params: { uri } }, ReadResourceResultSchema).catch((e: unknown) => e);
      expect(error, JSON.stringify(uri)).toBeInstanceOf(McpError);
      expect((error as McpError).code, JSON.stringify(uri)).toBe(ErrorCode.InvalidParams);
    }
    expect(sawMethod('resources/read')).toHaveLength(0);
  });

  it('refuses a file: URI with a query, and any URI with a fragment or a user part, which a server reading the resource drops', async () => {
    const { client, sawMethod } = await setup();
    // fileURLToPath('file:///srv/secrets?x') is /srv/secrets: a control scoped to file:///srv/secrets would not see the read.
    for (const uri of ['file:///srv/secrets?x', 'file:///srv/secrets#x', 'db://secrets#x', 'file:///srv/secrets?', 'db://any@secrets', 'https://a:b@host/secrets']) {
      const error = await client.request({ method: 'resources/read', params: { uri } }, ReadResourceResultSchema).catch((e: unknown) => e);
      expect(error, JSON.stringify(uri)).toBeInstanceOf(McpError);
      expect((error as McpError).code, JSON.stringify(uri)).toBe(ErrorCode.InvalidParams);
    }
    expect(sawMethod('resources/read')).toHaveLength(0);
  });

  it('refuses a file: URI whose path holds an empty segment or an encoded separator, which the file system or a server decoding the path reads as another path', async () => {
    const { client, sawMethod } = await setup();
    // open('/srv//secrets') opens /srv/secrets; unquote('/srv%2Fsecrets') is /srv/secrets: a control scoped to file:///srv/secrets would not see either read.
    for (const uri of ['file:///srv//secrets', 'file:////srv/secrets', 'file:///srv/secrets//x', 'file:///srv%2Fsecrets', 'file:///srv%2fsecrets/x', 'file:///srv%5Csecrets']) {
      const error = await client.request({ method: 'resources/read', params: { uri } }, ReadResourceResultSchema).catch((e: unknown) => e);
      expect(error, JSON.stringify(uri)).toBeInstanceOf(McpError);
      expect((error as McpError).code, JSON.stringify(uri)).toBe(ErrorCode.InvalidParams);
    }
    expect(sawMethod('resources/read')).toHaveLength(0);
  });

  it('refuses a resource URI whose escapes are written in lower case, which a server decoding the path reads as the upper-case one', async () => {
    const { client, sawMethod } = await setup();
    // new URL keeps an escape's case: db://s%c3%a9crets is not db://s%C3%A9crets to a control, but is to a server that decodes it.
    for (const uri of ['db://s%c3%a9crets', 'db://secrets/%e2%80%8b', 'file:///srv/s%c3%a9crets']) {
      const error = await client.request({ method: 'resources/read', params: { uri } }, ReadResourceResultSchema).catch((e: unknown) => e);
      expect(error, JSON.stringify(uri)).toBeInstanceOf(McpError);
      expect((error as McpError).code, JSON.stringify(uri)).toBe(ErrorCode.InvalidParams);
      expect((error as McpError).message, JSON.stringify(uri)).toContain(uri.replace(/%[0-9a-f]{2}/g, (e) => e.toUpperCase()));
    }
    expect(sawMethod('resources/read')).toHaveLength(0);
  });

  it('refuses a web URI whose host name ends in a dot, which DNS resolves as the host without it', async () => {
    const { client, sawMethod } = await setup();
    for (const uri of ['https://example.com./secrets', 'http://example.com../secrets', 'https://example.com%2E/secrets']) {
      const error = await client.request({ method: 'resources/read', params: { uri } }, ReadResourceResultSchema).catch((e: unknown) => e);
      expect(error, JSON.stringify(uri)).toBeInstanceOf(McpError);
      expect((error as McpError).code, JSON.stringify(uri)).toBe(ErrorCode.InvalidParams);
    }
    expect(sawMethod('resources/read')).toHaveLength(0);
  });

  it('withholds a resource whose content a post control denies, and never shows the key', async () => {
    const { client } = await setup();
    const error = await client.readResource({ uri: 'db://keys' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect(JSON.stringify(error)).not.toContain('AKIAIOSFODNN7EXAMPLE');
    expect((error as McpError).message).not.toContain('AKIAIOSFODNN7EXAMPLE');
  });

  it('checks a prompt\'s arguments before and its messages after', async () => {
    const { client, sawMethod } = await setup();
    expect((await client.getPrompt({ name: 'brief', arguments: { role: 'analyst' } })).messages[0]!.content).toEqual({ type: 'text', text: 'brief for analyst' });
    const denied = await client.getPrompt({ name: 'brief', arguments: { role: 'admin' } }).catch((e: unknown) => e);
    expect((denied as McpError).message).toMatch(/Blocked/);
    expect(sawMethod('prompts/get')).toHaveLength(1);
    const leaked = await client.getPrompt({ name: 'brief', arguments: { role: 'keys' } }).catch((e: unknown) => e);
    expect(leaked).toBeInstanceOf(McpError);
    expect(JSON.stringify(leaked)).not.toContain('AKIAIOSFODNN7EXAMPLE');
  });

  it('refuses another spelling of resources/read, prompts/get and tasks/result instead of relaying it unchecked', async () => {
    const { client, sawMethod } = await setup();
    for (const method of ['Resources/Read', 'resources/read\u200b', 'PROMPTS/GET', 'tasks/Result']) {
      const error = await client.request({ method, params: { uri: 'db://secrets', name: 'brief', taskId: 't' } }, ReadResourceResultSchema).catch((e: unknown) => e);
      expect((error as McpError).code, method).toBe(ErrorCode.MethodNotFound);
    }
    expect(sawMethod('resources/read')).toHaveLength(0);
  });

  it('refuses a resources/read without a uri and a prompts/get without a name', async () => {
    const { client } = await setup();
    const noUri = await client.request({ method: 'resources/read', params: {} }, ReadResourceResultSchema).catch((e: unknown) => e);
    expect((noUri as McpError).code).toBe(ErrorCode.InvalidParams);
    const badArgs = await client.request({ method: 'prompts/get', params: { name: 'brief', arguments: ['admin'] } }, GetPromptResultSchema).catch((e: unknown) => e);
    expect((badArgs as McpError).code).toBe(ErrorCode.InvalidParams);
  });
});

describe('tasks/result', () => {
  it('is refused for a task this gateway did not start: its result could not be checked', async () => {
    const { client, sawMethod, reports } = await setup();
    const error = await client.request({ method: 'tasks/result', params: { taskId: 'started-elsewhere' } }, CallToolResultSchema).catch((e: unknown) => e);
    expect((error as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((error as McpError).message).toContain('only for a task started through this gateway');
    expect(sawMethod('tasks/result')).toHaveLength(0);
    expect(reports.join('\n')).toContain('"started-elsewhere"');
  });
});

describe('--request-timeout', () => {
  it('starts again with each progress notification: a call that reports progress is not cut off', async () => {
    const { client } = await setup(150);
    const result = await client.callTool({ name: 'slow', arguments: { ms: 400 } }, CallToolResultSchema, { onprogress: () => undefined });
    expect(result.content).toEqual([{ type: 'text', text: 'finished' }]);
  });

  it('answers a silent call with a timeout error and cancels it on the server', async () => {
    const { client, aborted, sawMethod, reports } = await setup(150);
    const error = await client.callTool({ name: 'hang', arguments: {} }).catch((e: unknown) => e);
    expect((error as McpError).code).toBe(ErrorCode.RequestTimeout);
    await expect.poll(() => aborted.length).toBe(1);
    const cancelled = sawMethod('notifications/cancelled')[0] as unknown as { params: { requestId: unknown } };
    const call = sawMethod('tools/call')[0] as unknown as { id: unknown };
    expect(cancelled.params.requestId).toBe(call.id);
    expect(reports.join('\n')).toContain('cancelled it on the server');
  });
});
