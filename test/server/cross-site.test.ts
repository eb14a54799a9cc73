/**
 * DNS rebinding and cross-site requests (issue #34.6). With authentication off (the
 * default), a page on `rebind.evil.example` whose name resolves to 127.0.0.1 reaches the
 * server with `Host: rebind.evil.example`; a page on any site can send requests that carry
 * its `Origin` and `Sec-Fetch-Site: cross-site`. Both are refused on every method, reads
 * included; the Host check covers /health and /metrics too.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/config.js';
import { json, sqlControl, startTestServer, type TestServer } from './helpers.js';
import { rawRequest, startRawServer } from './raw-http.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function started(env: Record<string, string> = {}): Promise<TestServer> {
  server = await startTestServer({ env, observability: true });
  return server;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
const inject = (s: TestServer, method: Method, url: string, headers: Record<string, string>, payload?: unknown) =>
  s.app.inject({ method, url, headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...headers }, ...(payload === undefined ? {} : { payload: payload as never }) });

const create = { name: 'rebound', data: sqlControl() };

describe('the Host header', () => {
  it.each([
    'rebind.evil.example',
    'rebind.evil.example:8000',
    'localhost.evil.example',
    '127.0.0.1.nip.io',
    'evil.example#localhost',
    'localhost@evil.example',
    'evil.example@localhost',
    'localhost:8000@evil.example',
    '[::1].evil.example',
    '::1',
    'localhost:abc',
    'localhost:',
    'localhost:99999999',
    '0x7f000001',
    '2130706433',
    '127.1',
    '127.0.0.1 evil.example',
    'localhost.',
    '%6cocalhost',
  ])('Host "%s" is refused with 403 on writes and reads, and nothing is written', async (host) => {
    const s = await started();
    const put = await inject(s, 'PUT', '/api/v1/controls', { host }, create);
    expect(put.statusCode).toBe(403);
    expect(put.headers['content-type']).toContain('application/problem+json');
    expect(json(put)).toMatchObject({ status: 403, error_code: 'host_not_allowed' });
    expect(json(put).detail).toContain('Host');
    expect(await s.store.listAllControls()).toEqual([]);
    for (const url of ['/api/v1/controls', '/api/v1/agents', '/health', '/metrics']) {
      const res = await inject(s, 'GET', url, { host });
      expect(res.statusCode, url).toBe(403);
      expect(json(res).error_code, url).toBe('host_not_allowed');
    }
  });

  it.each(['localhost', 'LOCALHOST:8000', 'localhost:80', '127.0.0.1', '127.0.0.1:1234', '[::1]', '[::1]:8000', '[0:0:0:0:0:0:0:1]:8000'])(
    'Host "%s" is allowed by default',
    async (host) => {
      const s = await started();
      expect((await inject(s, 'PUT', '/api/v1/controls', { host }, create)).statusCode).toBe(201);
      expect((await inject(s, 'GET', '/health', { host })).statusCode).toBe(200);
    },
  );

  it('GUARD_ALLOWED_HOSTS replaces the defaults; case and port do not matter', async () => {
    const s = await started({ GUARD_ALLOWED_HOSTS: 'guard.example.com, 10.0.0.5' });
    expect((await inject(s, 'GET', '/api/v1/agents', { host: 'Guard.Example.com:443' })).statusCode).toBe(200);
    expect((await inject(s, 'GET', '/api/v1/agents', { host: '10.0.0.5:8000' })).statusCode).toBe(200);
    expect((await inject(s, 'GET', '/api/v1/agents', { host: 'localhost' })).statusCode).toBe(403);
    expect((await inject(s, 'GET', '/api/v1/agents', { host: 'evil.guard.example.com' })).statusCode).toBe(403);
    expect((await inject(s, 'GET', '/api/v1/agents', { host: 'guard.example.com.evil.example' })).statusCode).toBe(403);
  });

  it('"*" allows any Host (a proxy in front checks it), but not a foreign Origin', async () => {
    const s = await started({ GUARD_ALLOWED_HOSTS: '*' });
    expect((await inject(s, 'GET', '/api/v1/agents', { host: 'anything.example' })).statusCode).toBe(200);
    expect((await inject(s, 'GET', '/api/v1/agents', { host: 'anything.example', origin: 'https://anything.example' })).statusCode).toBe(200);
    const cross = await inject(s, 'PUT', '/api/v1/controls', { host: 'anything.example', origin: 'https://evil.example' }, create);
    expect(cross.statusCode).toBe(403);
    expect(json(cross).error_code).toBe('cross_site');
  });

  it('a request without a Host header, or with two, is a 400 problem', async () => {
    const { handle, port } = await startRawServer();
    try {
      for (const request of [
        'GET /health HTTP/1.0\r\n\r\n',
        'GET /api/v1/agents HTTP/1.1\r\nConnection: close\r\n\r\n',
        'PUT /api/v1/controls HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{"name":"x"}',
        'GET /api/v1/agents HTTP/1.1\r\nHost: localhost\r\nHost: rebind.evil.example\r\nConnection: close\r\n\r\n',
      ]) {
        const answer = await rawRequest(port, request);
        expect(answer.status, request).toBe(400);
        expect(answer.headers['content-type'], request).toContain('application/problem+json');
        expect(JSON.parse(answer.body).detail, request).toContain('Host');
      }
      expect((await rawRequest(port, 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n')).status).toBe(200);
      // An empty Host (inject cannot send one) names no allowed host.
      const empty = await rawRequest(port, 'GET /api/v1/agents HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n');
      expect(empty.status).toBe(403);
      expect(JSON.parse(empty.body).error_code).toBe('host_not_allowed');
    } finally {
      await handle.close();
    }
  });
});

describe('Origin and Sec-Fetch-Site', () => {
  it.each([
    [{ origin: 'https://evil.example' }, 'Origin'],
    [{ origin: 'http://localhost.evil.example' }, 'Origin'],
    [{ origin: 'http://127.0.0.1.nip.io:8000' }, 'Origin'],
    [{ origin: 'null' }, 'Origin'],
    [{ origin: 'garbage' }, 'Origin'],
    [{ origin: 'http://evil.example@localhost' }, 'Origin'],
    [{ 'sec-fetch-site': 'cross-site' }, 'Sec-Fetch-Site'],
    [{ 'sec-fetch-site': 'Cross-Site' }, 'Sec-Fetch-Site'],
    [{ 'sec-fetch-site': 'same-site' }, 'Sec-Fetch-Site'],
    [{ 'sec-fetch-site': 'bogus' }, 'Sec-Fetch-Site'],
    [{ origin: 'https://evil.example', 'sec-fetch-site': 'same-origin' }, 'Origin'],
    [{ origin: 'http://localhost:3000', 'sec-fetch-site': 'cross-site' }, 'Sec-Fetch-Site'],
  ])('%j is refused with 403 naming %s, on writes and on reads of data', async (headers, named) => {
    const s = await started();
    const put = await inject(s, 'PUT', '/api/v1/controls', { host: 'localhost:8000', ...headers }, create);
    expect(put.statusCode).toBe(403);
    expect(json(put)).toMatchObject({ status: 403, error_code: 'cross_site' });
    expect(json(put).detail).toContain(named);
    expect(await s.store.listAllControls()).toEqual([]);
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await inject(s, method, '/api/v1/agents', { host: 'localhost:8000', ...headers });
      expect(res.statusCode, method).toBe(403);
    }
    const evaluation = await inject(s, 'POST', '/api/v1/evaluation', { host: 'localhost:8000', ...headers }, { agent_name: 'a', stage: 'pre', step: { type: 'tool', name: 'x', input: {} } });
    expect(evaluation.statusCode).toBe(403);
  });

  it.each([
    [{ origin: 'http://localhost:3000' }],
    [{ origin: 'http://127.0.0.1:8000', 'sec-fetch-site': 'same-origin' }],
    [{ origin: 'http://[::1]:5173', 'sec-fetch-site': 'same-site' }],
    [{ 'sec-fetch-site': 'same-origin' }],
    [{ 'sec-fetch-site': 'none' }],
  ])('%j from an allowed origin is served', async (headers) => {
    const s = await started();
    expect((await inject(s, 'PUT', '/api/v1/controls', { host: 'localhost:8000', ...headers }, create)).statusCode).toBe(201);
  });

  it('/health and /metrics answer any Origin (they are public; the Host check still applies)', async () => {
    const s = await started();
    for (const url of ['/health', '/metrics']) {
      expect((await inject(s, 'GET', url, { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' })).statusCode, url).toBe(200);
    }
  });

  it('is checked before the key: a cross-site request learns nothing about keys', async () => {
    const s = await started({ GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: 'admin-key-0000000001' });
    const res = await inject(s, 'GET', '/api/v1/agents', { 'sec-fetch-site': 'cross-site' });
    expect(res.statusCode).toBe(403);
    expect(json(res).error_code).toBe('cross_site');
  });
});

describe('GUARD_ALLOWED_HOSTS', () => {
  it('defaults to the listen address, localhost, 127.0.0.1 and [::1]', () => {
    expect(loadConfig({}).allowedHosts).toEqual(['127.0.0.1', 'localhost', '[::1]']);
    expect(loadConfig({ HOST: '10.1.2.3' }).allowedHosts).toEqual(['10.1.2.3', 'localhost', '127.0.0.1', '[::1]']);
    expect(loadConfig({ HOST: '::1' }).allowedHosts).toEqual(['[::1]', 'localhost', '127.0.0.1']);
  });

  it('on every interface (0.0.0.0, ::) adds the machine’s addresses and host name', () => {
    const wide = loadConfig({ HOST: '0.0.0.0' }).allowedHosts;
    expect(wide).toEqual(expect.arrayContaining(['localhost', '127.0.0.1', '[::1]']));
    expect(wide).not.toContain('0.0.0.0');
    expect(wide).not.toContain('*');
    expect(loadConfig({ HOST: '::' }).allowedHosts).not.toContain('[::]');
  });

  it('follows a host given as an override (serve --host)', () => {
    expect(loadConfig({}, { host: '10.9.8.7' }).allowedHosts[0]).toBe('10.9.8.7');
  });

  it('reads names, addresses and *, lowercased; IPv6 addresses in brackets', () => {
    expect(loadConfig({ GUARD_ALLOWED_HOSTS: ' Guard.Example.com ,10.0.0.5, ::1 ,[fe80::1]' }).allowedHosts).toEqual([
      'guard.example.com', '10.0.0.5', '[::1]', '[fe80::1]',
    ]);
    expect(loadConfig({ GUARD_ALLOWED_HOSTS: '*' }).allowedHosts).toEqual(['*']);
  });

  it.each(['guard.example.com:8000', 'http://guard.example.com', '*.example.com', 'a b', 'evil@host', '[::1'])('refuses "%s" naming the variable', (entry) => {
    expect(() => loadConfig({ GUARD_ALLOWED_HOSTS: entry })).toThrow(/GUARD_ALLOWED_HOSTS/);
  });
});
