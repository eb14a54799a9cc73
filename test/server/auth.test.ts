import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, sqlControl, startTestServer, json, type TestServer } from './helpers.js';

const REGULAR = 'regular-key-000001';
const ADMIN = 'admin-key-00000001';

let server: TestServer;
let controlId: number;
let baseUrl: string;

beforeAll(async () => {
  server = await startTestServer({
    observability: true,
    // The matrix sends two wrong keys per route from one address: far past the throttle
    // (auth-throttle.test.ts), which would answer 429 instead of the 401 checked here.
    env: { GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: ` other-key-00000001 , ${REGULAR},,`, GUARD_ADMIN_API_KEYS: ADMIN, GUARD_AUTH_MAX_FAILURES: '100000' },
  });
  const admin = { 'x-api-key': ADMIN };
  controlId = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'c', data: sqlControl() }, admin)).control_id;
  await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' }, admin);
  baseUrl = await server.app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await server.close();
});

function concrete(url: string): string {
  return url.replace(/:control_id|:id/g, String(controlId)).replace(/:name/g, 'bot').replace(/:approval_id/g, 'apr_unknown');
}

/** The live stream never ends, so it is checked over a real socket and aborted after the headers. */
async function statusOf(method: string, url: string, key: string | undefined): Promise<number> {
  const headers: Record<string, string> = key ? { 'x-api-key': key } : {};
  if (url.endsWith('/stream')) {
    const abort = new AbortController();
    const res = await fetch(`${baseUrl}${url}`, { method, headers, signal: abort.signal });
    abort.abort();
    return res.status;
  }
  const res = await server.app.inject({ method: method as 'GET', url, headers, payload: method === 'GET' || method === 'DELETE' ? undefined : {} });
  return res.statusCode;
}

describe('auth matrix: every registered route × no key, regular key, admin key', () => {
  it('covers the routes of SPEC section 4', () => {
    const urls = server.app.registeredRoutes.map((r) => `${r.method} ${r.url}`);
    expect(urls).toEqual(expect.arrayContaining([
      'GET /health', 'GET /metrics', 'PUT /api/v1/controls', 'POST /api/v1/evaluation',
      'POST /api/v1/agents/initAgent', 'POST /api/v1/observability/events',
    ]));
  });

  it('answers 401 without or with an unknown key, 403 for a regular key on admin routes, and lets allowed keys through', async () => {
    const failures: string[] = [];
    // Deletions last, so the rows other routes need still exist while they run.
    const routes = [...server.app.registeredRoutes].sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
    for (const route of routes) {
      const url = concrete(route.url);
      const none = await statusOf(route.method, url, undefined);
      const unknown = await statusOf(route.method, url, 'not-a-key');
      const regular = await statusOf(route.method, url, REGULAR);
      const admin = await statusOf(route.method, url, ADMIN);
      const expectNone = route.access === 'public' ? 'allowed' : 401;
      // Deciding an approval needs an admin or approver key (approvals.test.ts checks the approver's).
      const expectRegular = route.access === 'admin' || route.access === 'approve' ? 403 : 'allowed';
      const verdict = (status: number) => (status === 401 || status === 403 ? status : 'allowed');
      const got = [verdict(none), verdict(unknown), verdict(regular), verdict(admin)];
      const want = [expectNone, expectNone, expectRegular, 'allowed'];
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        failures.push(`${route.method} ${route.url} (${route.access}): got ${got.join('/')}, want ${want.join('/')}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('sends WWW-Authenticate and a problem body on 401, never echoing the key', async () => {
    const res = await call(server.app, 'GET', '/api/v1/agents', undefined, { 'x-api-key': 'secret-guess' });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe('ApiKey');
    expect(json(res)).toMatchObject({ status: 401, error_code: 'unauthorized' });
    expect(res.body).not.toContain('secret-guess');
  });

  it('declares the documented levels: validate, initAgent and evaluation need only a regular key', () => {
    const access = (method: string, url: string) =>
      server.app.registeredRoutes.find((r) => r.method === method && r.url === url)?.access;
    expect(access('POST', '/api/v1/controls/validate')).toBe('read');
    expect(access('POST', '/api/v1/agents/initAgent')).toBe('read');
    expect(access('POST', '/api/v1/evaluation')).toBe('read');
    expect(access('PUT', '/api/v1/controls')).toBe('admin');
    expect(access('GET', '/health')).toBe('public');
  });
});
