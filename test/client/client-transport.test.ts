import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.js';
import { ConnectionError, GuardClient, ResponseShapeError } from '../../src/client/index.js';
import { sendJson, startFakeServer, type FakeServer } from './fake-server.js';

let server: FakeServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

/** A port that was free a moment ago: nothing listens there. */
async function closedPortUrl(): Promise<string> {
  const s = await startFakeServer(() => undefined);
  await s.close();
  return s.url;
}

describe('GuardClient transport', () => {
  it('sends X-API-Key, JSON bodies and query strings, and returns the parsed answer', async () => {
    server = await startFakeServer((req, res) => {
      if (req.url.startsWith('/api/v1/controls?')) {
        sendJson(res, 200, { controls: [], pagination: { limit: 5, next_cursor: null, has_more: false, total: 0 } });
      } else sendJson(res, 200, { received: 1, enqueued: 1, dropped: 0 }, 'application/json; charset=utf-8');
    });
    const client = new GuardClient({ serverUrl: `${server.url}/`, apiKey: 'k-123' });
    const page = await client.listControls({ cursor: 7, limit: 5 });
    expect(page.pagination.total).toBe(0);
    expect(server.seen[0]!.url).toBe('/api/v1/controls?cursor=7&limit=5');
    expect(server.seen[0]!.headers['x-api-key']).toBe('k-123');
    const ack = await client.ingestEvents([]);
    expect(ack).toMatchObject({ received: 1, enqueued: 1, dropped: 0 });
    expect(server.seen[1]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(server.seen[1]!.body)).toEqual({ events: [] });
  });

  it('sends no X-API-Key header without a key', async () => {
    server = await startFakeServer((_req, res) => sendJson(res, 200, { status: 'healthy', version: '1' }));
    await new GuardClient({ serverUrl: server.url }).health();
    expect(server.seen[0]!.headers['x-api-key']).toBeUndefined();
  });

  it('follows cursors in listAllControls', async () => {
    const record = (id: number) => ({
      control_id: id, name: `c${id}`, enabled: true, data: null, managed_by: null, source: null,
      created_at: 't', updated_at: 't',
    });
    server = await startFakeServer((req, res) => {
      const cursor = new URL(req.url, 'http://x').searchParams.get('cursor');
      if (cursor === null) sendJson(res, 200, { controls: [record(1), record(2)], pagination: { limit: 2, next_cursor: 2, has_more: true, total: 3 } });
      else sendJson(res, 200, { controls: [record(3)], pagination: { limit: 2, next_cursor: null, has_more: false, total: 3 } });
    });
    const all = await new GuardClient({ serverUrl: server.url }).listAllControls(2);
    expect(all.map((c) => c.control_id)).toEqual([1, 2, 3]);
    expect(server.seen.map((s) => s.url)).toEqual(['/api/v1/controls?limit=2', '/api/v1/controls?cursor=2&limit=2']);
  });

  it('turns a problem+json error answer into ApiError with the body', async () => {
    const problem = {
      type: 'about:blank', title: 'Unprocessable Entity', status: 422, detail: 'control data is invalid',
      error_code: 'validation_failed', errors: [{ field: 'data.action.decision', code: 'invalid_value', message: 'bad' }],
    };
    server = await startFakeServer((_req, res) => sendJson(res, 422, problem, 'application/problem+json'));
    const error = await new GuardClient({ serverUrl: server.url }).validateControlData({}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    const api = error as ApiError;
    expect(api.status).toBe(422);
    expect(api.problem?.errors?.[0]?.field).toBe('data.action.decision');
    expect(api.message).toBe('control data is invalid');
  });

  it('keeps the status when an error answer is not JSON', async () => {
    server = await startFakeServer((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>bad gateway</html>');
    });
    const error = await new GuardClient({ serverUrl: server.url }).health().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(502);
    expect((error as ApiError).problem).toBeNull();
  });

  it('names ECONNREFUSED and the URL when nothing listens', async () => {
    const url = await closedPortUrl();
    const error = await new GuardClient({ serverUrl: url }).health().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    const conn = error as ConnectionError;
    expect(conn.code).toBe('ECONNREFUSED');
    expect(conn.message).toContain(`${url}/health`);
    expect(conn.message).toContain('ECONNREFUSED');
  });

  it('names a DNS failure', async () => {
    const error = await new GuardClient({ serverUrl: 'http://no-such-host.invalid:8000' }).health().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).code).toMatch(/ENOTFOUND|EAI_AGAIN/);
    expect((error as ConnectionError).message).toContain('no-such-host.invalid');
  });

  it('times out a server that never answers', async () => {
    server = await startFakeServer(() => undefined);
    const error = await new GuardClient({ serverUrl: server.url, timeoutMs: 200 }).health().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).code).toBe('TIMEOUT');
    expect((error as ConnectionError).message).toContain('200 ms');
  });

  it('times out a body that stops halfway', async () => {
    server = await startFakeServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"status":');
    });
    const error = await new GuardClient({ serverUrl: server.url, timeoutMs: 200 }).health().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as ConnectionError).code).toBe('TIMEOUT');
  });

  const garbage: Array<[string, (res: ServerResponse) => void, RegExp]> = [
    ['an HTML page with 200', (res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!DOCTYPE html><html><body>Welcome to nginx</body></html>');
    }, /not JSON \(text\/html/],
    ['truncated JSON', (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"healthy","vers');
    }, /not JSON/],
    ['a body cut off before content-length', (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.end('{"status":"healthy"');
      res.socket?.destroy();
    }, /cut off|not JSON/],
    ['JSON of the wrong shape', (res) => sendJson(res, 200, { status: 'healthy', version: 3 }), /wrong shape \(version:/],
    ['an empty body', (res) => {
      res.writeHead(200);
      res.end();
    }, /not JSON .*empty/],
  ];
  for (const [what, respond, pattern] of garbage) {
    it(`names the endpoint when a 2xx answer is ${what}`, async () => {
      server = await startFakeServer((_req, res) => respond(res));
      const error = await new GuardClient({ serverUrl: server.url }).health().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResponseShapeError);
      expect((error as ResponseShapeError).endpoint).toBe('GET /health');
      expect((error as Error).message).toMatch(pattern);
    });
  }

  it('rejects an evaluation result that is not an EvaluationResult', async () => {
    server = await startFakeServer((_req, res) => sendJson(res, 200, { is_safe: true }));
    const error = await new GuardClient({ serverUrl: server.url })
      .evaluate({ agent_name: 'a', stage: 'pre', step: { type: 'tool', name: 't', input: {} } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseShapeError);
    expect((error as ResponseShapeError).endpoint).toBe('POST /evaluation');
  });

  it('refuses an invalid server URL up front', () => {
    expect(() => new GuardClient({ serverUrl: 'not a url' })).toThrow(ConnectionError);
  });
});
