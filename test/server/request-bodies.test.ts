/**
 * What a request body must be: UTF-8 (invalid bytes are refused, never replaced and
 * stored), and JSON: a body of any other content type is refused (415). A write with no
 * body needs no content type (SPEC's clients send none: `curl -X POST`, httpx.post(url));
 * cross-site requests are refused by the Host, Origin and Sec-Fetch-Site checks
 * (cross-site.test.ts), never by the content type.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, json, seedAgentWithControl, sqlControl, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await server.close();
});

const send = (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload: string | Buffer | undefined, headers: Record<string, string>) =>
  server.app.inject({ method, url, ...(payload === undefined ? {} : { payload }), headers });

describe('UTF-8 bodies', () => {
  it.each([
    ['a lone 0xFF byte', Buffer.from([0xff])],
    ['a truncated 3-byte sequence', Buffer.from([0xe0, 0xa4])],
    ['an overlong encoding of "/"', Buffer.from([0xc0, 0xaf])],
    ['an encoded surrogate half', Buffer.from([0xed, 0xa0, 0x80])],
  ])('%s in a string is a 400 problem and nothing is stored', async (_what, bad) => {
    const body = Buffer.concat([Buffer.from('{"name": "evil'), bad, Buffer.from('", "data": '), Buffer.from(JSON.stringify(sqlControl())), Buffer.from('}')]);
    const res = await send('PUT', '/api/v1/controls', body, { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(json(res)).toMatchObject({ status: 400, error_code: 'invalid_utf8' });
    expect(await server.store.listAllControls()).toEqual([]);
  });

  it('invalid UTF-8 in an evaluated step is refused too', async () => {
    await seedAgentWithControl(server.app);
    const body = Buffer.concat([Buffer.from('{"agent_name":"support-bot","stage":"pre","step":{"type":"tool","name":"run_sql","input":{"query":"DROP'), Buffer.from([0xff]), Buffer.from(' TABLE x"}}}')]);
    const res = await send('POST', '/api/v1/evaluation', body, { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(400);
    expect(json(res).error_code).toBe('invalid_utf8');
  });

  it('valid multi-byte UTF-8 is kept as sent', async () => {
    const res = await send('PUT', '/api/v1/controls', Buffer.from(JSON.stringify({ name: 'block-drop', data: sqlControl({ description: 'ÄÖÜ ✓ 日本 😀' }) }), 'utf8'), {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(res.statusCode).toBe(201);
    expect(json(res)).toMatchObject({ name: 'block-drop', data: { description: 'ÄÖÜ ✓ 日本 😀' } });
  });
});

describe('content types of writes', () => {
  it.each([
    ['text/plain'],
    ['text/plain;charset=UTF-8'],
    ['application/x-www-form-urlencoded'],
    ['multipart/form-data; boundary=x'],
  ])('a body-less link with content-type %s is a 415 problem and links nothing', async (type) => {
    const id = await seedAgentWithControl(server.app, 'bot', 'ctl');
    await call(server.app, 'DELETE', `/api/v1/agents/bot/controls/${id}`);
    const res = await send('POST', `/api/v1/agents/bot/controls/${id}`, undefined, { 'content-type': type });
    expect(res.statusCode).toBe(415);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(json(res).error_code).toBe('unsupported_media_type');
    expect(await server.store.listLinks()).toEqual([]);
  });

  it.each(['POST', 'DELETE'] as const)('a body-less %s without any content type is accepted (curl -X POST, httpx.post(url))', async (method) => {
    const id = await seedAgentWithControl(server.app, 'bot', 'ctl');
    await call(server.app, 'DELETE', `/api/v1/agents/bot/controls/${id}`);
    if (method === 'DELETE') await call(server.app, 'POST', `/api/v1/agents/bot/controls/${id}`);
    const res = await send(method, `/api/v1/agents/bot/controls/${id}`, undefined, {});
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual(method === 'POST' ? { linked: true } : { unlinked: true });
    expect(await server.store.listLinks()).toHaveLength(method === 'POST' ? 1 : 0);
  });

  it('a body-less POST saying content-length: 0 without a content type is accepted', async () => {
    const id = await seedAgentWithControl(server.app, 'bot', 'ctl');
    await call(server.app, 'DELETE', `/api/v1/agents/bot/controls/${id}`);
    const res = await send('POST', `/api/v1/agents/bot/controls/${id}`, '', { 'content-length': '0' });
    expect(res.statusCode).toBe(200);
    expect(await server.store.listLinks()).toHaveLength(1);
  });

  it('an empty JSON body (or only whitespace) on a body-less write is accepted', async () => {
    const id = await seedAgentWithControl(server.app, 'bot', 'ctl');
    await call(server.app, 'DELETE', `/api/v1/agents/bot/controls/${id}`);
    const res = await send('POST', `/api/v1/agents/bot/controls/${id}`, ' \n', { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(200);
    expect(await server.store.listLinks()).toHaveLength(1);
  });

  it.each([
    ['PUT', '/api/v1/controls'],
    ['POST', '/api/v1/agents/initAgent'],
  ] as const)('a %s to %s with a body but no content type is refused (415), and nothing is written', async (method, url) => {
    const res = await send(method, url, JSON.stringify({ name: 'x', agent_name: 'x' }), {});
    expect(res.statusCode).toBe(415);
    expect(json(res).error_code).toBe('unsupported_media_type');
    expect(await server.store.listAllControls()).toEqual([]);
    expect(await server.store.listAgents()).toEqual([]);
  });

  it('a body-less write that needs a body, sent without a content type, is a 422 naming the body', async () => {
    const res = await send('PUT', '/api/v1/controls', undefined, {});
    expect(res.statusCode).toBe(422);
  });

  it('a text/plain body holding JSON is refused on PUT and PATCH', async () => {
    const put = await send('PUT', '/api/v1/controls', JSON.stringify({ name: 'x' }), { 'content-type': 'text/plain' });
    expect(put.statusCode).toBe(415);
    const id = await seedAgentWithControl(server.app, 'bot', 'ctl');
    const patch = await send('PATCH', `/api/v1/controls/${id}`, JSON.stringify({ enabled: false }), { 'content-type': 'text/plain' });
    expect(patch.statusCode).toBe(415);
    expect((await server.store.getControl(id))?.enabled).toBe(true);
  });

  it('a DELETE with a text/plain content type is refused; a DELETE with none is allowed', async () => {
    const id = await seedAgentWithControl(server.app, 'bot', 'ctl');
    const refused = await send('DELETE', `/api/v1/agents/bot/controls/${id}`, undefined, { 'content-type': 'text/plain' });
    expect(refused.statusCode).toBe(415);
    expect(await server.store.listLinks()).toHaveLength(1);
    const allowed = await send('DELETE', `/api/v1/agents/bot/controls/${id}`, undefined, {});
    expect(allowed.statusCode).toBe(200);
    expect(await server.store.listLinks()).toEqual([]);
  });

  it('body-less writes with application/json (any case, with a charset) are accepted', async () => {
    const id = await seedAgentWithControl(server.app, 'bot', 'ctl');
    await call(server.app, 'DELETE', `/api/v1/agents/bot/controls/${id}`);
    const res = await send('POST', `/api/v1/agents/bot/controls/${id}`, undefined, { 'content-type': 'Application/JSON; charset=utf-8' });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ linked: true });
  });

  it('reads are not affected: a GET needs no content type', async () => {
    expect((await send('POST', '/api/v1/agents/initAgent', JSON.stringify({ agent_name: 'a' }), { 'content-type': 'application/json' })).statusCode).toBe(201);
    expect((await server.app.inject({ method: 'GET', url: '/api/v1/agents', headers: { 'content-type': 'text/plain' } })).statusCode).toBe(200);
  });
});
