/**
 * How the gateway tells JSON-RPC messages apart without validating them again: the one
 * schema a line is validated against accepts exactly what the SDK's JSONRPCMessageSchema
 * accepts (and gives the same message), and a message a transport did not validate is
 * never taken for an answer when it has a method and an id.
 */
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { kindOf, parseMessage, schemaFor } from '../../src/adapters/mcp-message.js';
import { McpRelay } from '../../src/adapters/mcp-relay.js';
import type { Transport } from '../../src/adapters/mcp.js';
import { GuardAgent } from '../../src/sdk/index.js';
import { quietLogger } from './guarded-agent.js';

const lines: unknown[] = [
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'x' } } },
  { jsonrpc: '2.0', id: 'a', method: 'tools/list' },
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: { progressToken: 7, extra: 1 }, name: 'x' } },
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: { progressToken: 1.5 } } },
  { jsonrpc: '2.0', id: 1.5, method: 'tools/call' },
  { jsonrpc: '2.0', id: null, method: 'tools/call' },
  { jsonrpc: '2.0', id: 1, method: 'tools/call', extra: true },
  { jsonrpc: '1.0', id: 1, method: 'tools/call' },
  { jsonrpc: '2.0', id: 1, method: 7 },
  { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', method: 'notifications/x', params: [] },
  { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'ok' }] } },
  { jsonrpc: '2.0', id: 1, result: { _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't', more: 1 } } } },
  { jsonrpc: '2.0', id: 1, result: 'text' },
  { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'both' } },
  { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'no', data: { a: 1 }, extra: 'stripped' } },
  { jsonrpc: '2.0', error: { code: -32700, message: 'parse error' } },
  { jsonrpc: '2.0', id: 1, error: { code: 1.5, message: 'not an integer' } },
  { jsonrpc: '2.0', id: 1 },
  { jsonrpc: '2.0', id: 1, method: 'tools/call', result: {} },
  JSON.parse('{"jsonrpc":"2.0","id":1,"method":"tools/call","__proto__":{"x":1}}'),
  JSON.parse('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"__proto__":{"x":1},"name":"a"}}'),
  JSON.parse('{"jsonrpc":"2.0","id":1,"result":{"__proto__":{"isError":true},"content":[]}}'),
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: null },
  { jsonrpc: '2.0', id: 1, method: 'tools/call', params: 'x' },
  { jsonrpc: '2.0', method: 'notifications/x', id: 2.5 },
  { jsonrpc: '2.0', id: 1, result: [] },
  { jsonrpc: '2.0', id: 1, result: null },
  { jsonrpc: '2.0', id: '1', result: {}, extra: 1 },
  { jsonrpc: '2.0', result: {} },
  { id: 1, method: 'tools/call' },
  'text',
  42,
  null,
];

describe('schemaFor', () => {
  it.each(lines.map((line) => [JSON.stringify(line), line]))('validates %s as JSONRPCMessageSchema does', (_text, line) => {
    const union = JSONRPCMessageSchema.safeParse(line);
    const one = schemaFor(line).safeParse(line);
    expect(one.success).toBe(union.success);
    expect(one.data).toEqual(union.data);
  });

  it.each(lines.map((line) => [JSON.stringify(line), line]))('parseMessage reads %s as JSONRPCMessageSchema does', (_text, line) => {
    const union = JSONRPCMessageSchema.safeParse(line);
    const parsed = parseMessage(line);
    expect(parsed.success).toBe(union.success);
    if (parsed.success) expect(parsed.data).toEqual(union.data);
    if (parsed.success && union.success) expect(Object.getPrototypeOf((parsed.data as { result?: object }).result ?? {})).toBe(Object.getPrototypeOf((union.data as { result?: object }).result ?? {}));
  });

  it('gives each valid message the kind its shape names', () => {
    const kinds = lines.flatMap((line) => {
      const parsed = JSONRPCMessageSchema.safeParse(line);
      return parsed.success ? [kindOf(parsed.data)] : [];
    });
    expect(kinds).toEqual(['request', 'request', 'request', 'notification', 'notification', 'result', 'result', 'error', 'error', 'request', 'result']);
  });
});

describe('a relay behind a transport that does not validate', () => {
  it('never passes a call with an invalid id to the server as if it were an answer', () => {
    const sent: JSONRPCMessage[] = [];
    const reports: string[] = [];
    const transport = (into: JSONRPCMessage[]): Transport => ({ start: () => Promise.resolve(), close: () => Promise.resolve(), send: (m) => (into.push(m), Promise.resolve()) });
    const guard = new GuardAgent({ agentName: 'kinds', serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, []);
    const relay = new McpRelay({ guard, client: transport([]), server: transport(sent), serverName: 's', serverNameFixed: true, requestTimeoutMs: 0, report: (l) => reports.push(l) });
    for (const id of [1.5, null, {}, true]) {
      relay.fromClient({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_sql', arguments: { query: 'DROP TABLE t' } } } as unknown as JSONRPCMessage);
    }
    expect(sent).toEqual([]);
    expect(reports).toHaveLength(4);
    expect(reports[0]).toContain('not JSON-RPC');
    relay.close();
  });

  it('answers the pending requests with errors when the server sends a message with an invalid id', async () => {
    const toClient: JSONRPCMessage[] = [];
    const toServer: JSONRPCMessage[] = [];
    const reports: string[] = [];
    const transport = (into: JSONRPCMessage[]): Transport => ({ start: () => Promise.resolve(), close: () => Promise.resolve(), send: (m) => (into.push(m), Promise.resolve()) });
    const guard = new GuardAgent({ agentName: 'kinds', serverUrl: 'http://127.0.0.1:9', events: false, logger: quietLogger, tracer: false }, []);
    const relay = new McpRelay({ guard, client: transport(toClient), server: transport(toServer), serverName: 's', serverNameFixed: true, requestTimeoutMs: 0, report: (l) => reports.push(l) });
    relay.fromClient({ jsonrpc: '2.0', id: 1, method: 'resources/list' });
    expect(toServer).toHaveLength(1);
    relay.fromServer({ jsonrpc: '2.0', id: 0.5, method: 'sampling/createMessage' } as unknown as JSONRPCMessage);
    expect(relay.pendingCount).toBe(0);
    expect(toClient).toEqual([{ jsonrpc: '2.0', id: 1, error: expect.objectContaining({ message: 'the MCP server answered with malformed JSON-RPC' }) as unknown }]);
    expect(reports[0]).toContain('not JSON-RPC');
    relay.close();
  });
});
