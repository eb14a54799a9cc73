/** The HTTP face's reading of Accept, Content-Type, MCP-Protocol-Version and POST bodies (mcp-http-wire.ts). */
import { describe, expect, it } from 'vitest';
import { isJsonContentType, lists, parseBody, prefersEventStream, protocolVersionRefusal } from '../../src/adapters/mcp-http-wire.js';

describe('Accept', () => {
  it('counts a type only when listed by name with a q-value above 0', () => {
    expect(lists('application/json, text/event-stream', 'text/event-stream')).toBe(true);
    expect(lists('Application/JSON;charset=utf-8', 'application/json')).toBe(true);
    expect(lists('*/*', 'application/json')).toBe(false);
    expect(lists('text/event-stream;q=0', 'text/event-stream')).toBe(false);
    expect(lists('text/event-stream; q=0.1', 'text/event-stream')).toBe(true);
    expect(lists(undefined, 'application/json')).toBe(false);
  });

  it('prefers an SSE stream on a higher q-value, or on the same one listed first', () => {
    expect(prefersEventStream('application/json, text/event-stream')).toBe(false);
    expect(prefersEventStream('text/event-stream, application/json')).toBe(true);
    expect(prefersEventStream('text/event-stream;q=0.5, application/json')).toBe(false);
    expect(prefersEventStream('application/json;q=0.5, text/event-stream')).toBe(true);
  });
});

describe('Content-Type and MCP-Protocol-Version', () => {
  it('takes application/json with parameters, nothing else', () => {
    expect(isJsonContentType('application/json; charset=utf-8')).toBe(true);
    expect(isJsonContentType('application/jsonx')).toBe(false);
    expect(isJsonContentType('text/plain')).toBe(false);
    expect(isJsonContentType(undefined)).toBe(false);
  });

  it('takes no header, a version the SDK supports, or the negotiated one; refuses the rest', () => {
    expect(protocolVersionRefusal(undefined, '2025-11-25')).toBeNull();
    expect(protocolVersionRefusal('2025-06-18', '2025-11-25')).toBeNull();
    expect(protocolVersionRefusal('2099-01-01', '2099-01-01')).toBeNull();
    expect(protocolVersionRefusal('2099-01-01', '2025-11-25')).toMatch(/unsupported MCP-Protocol-Version "2099-01-01": this session speaks 2025-11-25/);
    expect(protocolVersionRefusal(['2025-11-25', '2025-11-25'], '2025-11-25')).not.toBeNull();
  });
});

describe('POST bodies', () => {
  const request = { jsonrpc: '2.0', id: 1, method: 'ping' };

  it('reads one message, or a batch only before 2025-06-18, of 1 to 100 messages', () => {
    expect(parseBody(JSON.stringify(request), '2025-11-25')).toEqual({ ok: true, messages: [request], batch: false });
    expect(parseBody(JSON.stringify([request]), '2025-03-26')).toEqual({ ok: true, messages: [request], batch: true });
    expect(parseBody(JSON.stringify([request]), '2025-06-18')).toMatchObject({ ok: false, code: -32600 });
    expect(parseBody('[]', '2025-03-26')).toMatchObject({ ok: false, code: -32600 });
    expect(parseBody(JSON.stringify(Array.from({ length: 101 }, (_, id) => ({ ...request, id }))), '2025-03-26')).toMatchObject({ ok: false, code: -32600 });
  });

  it('answers text that is not JSON with a parse error, and JSON that is not JSON-RPC with an invalid request', () => {
    expect(parseBody('{"jsonrpc":', '2025-11-25')).toMatchObject({ ok: false, code: -32700 });
    expect(parseBody('', '2025-11-25')).toMatchObject({ ok: false, code: -32700 });
    expect(parseBody(JSON.stringify({ jsonrpc: '2.0', id: 1.5, method: 'ping' }), '2025-11-25')).toMatchObject({ ok: false, code: -32600 });
    expect(parseBody(JSON.stringify([request, { id: 2 }]), '2025-03-26')).toMatchObject({ ok: false, code: -32600, message: 'message 1 of the batch is not a JSON-RPC message' });
  });
});
