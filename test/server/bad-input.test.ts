import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreError } from '../../src/store/types.js';
import { call, json, seedAgentWithControl, sqlControl, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer({ env: { GUARD_BODY_LIMIT_BYTES: '65536' } });
});
afterEach(async () => {
  await server.close();
});

const raw = (method: 'POST' | 'PUT', url: string, body: string, contentType = 'application/json') =>
  server.app.inject({ method, url, payload: body, headers: { 'content-type': contentType } });

describe('bad input', () => {
  it('answers 400 problem+json for malformed JSON', async () => {
    const res = await raw('PUT', '/api/v1/controls', '{"name": "x",');
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(json(res)).toMatchObject({ status: 400, error_code: 'malformed_json', title: 'Bad Request' });
  });

  it('a __proto__ key in a control body is an unknown field (422), and no prototype changes', async () => {
    const res = await raw('PUT', '/api/v1/controls', '{"name": "x", "__proto__": {"admin": true}}');
    expect(res.statusCode).toBe(422);
    expect(json(res).errors).toEqual([expect.objectContaining({ field: '__proto__' })]);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it('answers 413 for a body over the configured limit', async () => {
    const res = await raw('PUT', '/api/v1/controls', JSON.stringify({ name: 'x', pad: 'y'.repeat(70_000) }));
    expect(res.statusCode).toBe(413);
    expect(json(res).error_code).toBe('payload_too_large');
  });

  it('answers 415 for bodies that are not JSON', async () => {
    const res = await raw('PUT', '/api/v1/controls', 'name=x', 'application/x-www-form-urlencoded');
    expect(res.statusCode).toBe(415);
    expect(json(res).error_code).toBe('unsupported_media_type');
  });

  it('survives JSON nested 100,000 levels deep (a step that deep is denied) and keeps serving', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const bigServer = await startTestServer();
    try {
      const res = await bigServer.app.inject({
        method: 'POST',
        url: '/api/v1/evaluation',
        payload: `{"agent_name":"a","stage":"pre","step":{"type":"tool","name":"x","input":${deep}}}`,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.statusCode).toBe(200);
      expect(json(res)).toMatchObject({ is_safe: false, decision: 'deny' });
      const put = await bigServer.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: `{"name":"x","data":${deep}}`, headers: { 'content-type': 'application/json' } });
      expect(put.statusCode).toBe(400);
      expect(json(put).detail).toContain('nested deeper');
      expect((await call(bigServer.app, 'GET', '/health')).statusCode).toBe(200);
    } finally {
      await bigServer.close();
    }
  });

  it('answers 413 to a 5 MB body with the default 1 MiB limit', async () => {
    const bigServer = await startTestServer();
    try {
      const res = await bigServer.app.inject({
        method: 'POST',
        url: '/api/v1/evaluation',
        payload: JSON.stringify({ agent_name: 'a', stage: 'pre', step: { type: 'tool', name: 'x', input: 'z'.repeat(5 * 1024 * 1024) } }),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.statusCode).toBe(413);
    } finally {
      await bigServer.close();
    }
  });

  it('answers 404 problem+json for unknown routes', async () => {
    const res = await call(server.app, 'GET', '/api/v1/nothing-here?x=1');
    expect(res.statusCode).toBe(404);
    expect(json(res)).toMatchObject({ error_code: 'not_found', detail: 'no route GET /api/v1/nothing-here' });
  });

  it('a failed request changes nothing stored', async () => {
    const id = await seedAgentWithControl(server.app);
    const before = await server.store.revision();
    const snapshot = JSON.stringify(await server.store.listAllControls());
    const failing = [
      await call(server.app, 'PUT', '/api/v1/controls', { name: 'block-drop', data: sqlControl() }),
      await call(server.app, 'PUT', '/api/v1/controls', { name: 'new', data: { action: { decision: 'nope' } } }),
      await call(server.app, 'PATCH', `/api/v1/controls/${id}`, { name: 'renamed', enabled: 'maybe' }),
      await call(server.app, 'PUT', `/api/v1/controls/${id}/data`, { data: sqlControl({ selector: { path: '' } }) }),
      await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'support-bot', agent_version: 'x', conflict_mode: 'strict' }),
      await call(server.app, 'POST', `/api/v1/agents/support-bot/controls/999`),
      await raw('PUT', '/api/v1/controls', '{"name":'),
    ];
    for (const res of failing) expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(await server.store.revision()).toBe(before);
    expect(JSON.stringify(await server.store.listAllControls())).toBe(snapshot);
  });

  it('5xx bodies carry no stack trace or SQL; store outages are 503', async () => {
    const broken = await startTestServer({
      wrapStore: (real) =>
        new Proxy(real, {
          get(target, prop, receiver) {
            if (prop === 'listAgents') return async () => { throw new Error('SQLITE_CORRUPT: SELECT * FROM agents at /src/x.ts:1'); };
            if (prop === 'listAllControls') return async () => { throw new StoreError('unavailable', 'connect ECONNREFUSED 10.0.0.5:5432 user=admin'); };
            if (prop === 'listControls') return async () => { throw new StoreError('unavailable', 'connect ECONNREFUSED 10.0.0.5:5432 user=admin'); };
            return Reflect.get(target, prop, receiver);
          },
        }),
    });
    try {
      const res = await call(broken.app, 'GET', '/api/v1/agents');
      expect(res.statusCode).toBe(500);
      expect(json(res)).toEqual({
        type: expect.any(String), title: 'Internal Server Error', status: 500, detail: 'internal error', error_code: 'internal',
      });
      const down = await call(broken.app, 'GET', '/api/v1/controls');
      expect(down.statusCode).toBe(503);
      expect(down.body).not.toContain('ECONNREFUSED');
      expect(json(down).error_code).toBe('unavailable');
    } finally {
      await broken.close();
    }
  });
});
