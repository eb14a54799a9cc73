import { afterEach, describe, expect, it } from 'vitest';
import { AuthThrottle } from '../../src/server/auth-throttle.js';
import { call, json, startTestServer, type TestServer } from './helpers.js';

describe('AuthThrottle', () => {
  it('blocks an address after maxFailures in a window, until the window ends', () => {
    let now = 1_000_000;
    const throttle = new AuthThrottle({ maxFailures: 3, windowMs: 60_000, now: () => now });
    for (let i = 0; i < 3; i++) {
      expect(throttle.blockedFor('10.0.0.1')).toBe(0);
      throttle.recordFailure('10.0.0.1');
    }
    expect(throttle.blockedFor('10.0.0.1')).toBe(60_000);
    expect(throttle.blockedFor('10.0.0.2')).toBe(0);
    now += 59_000;
    expect(throttle.blockedFor('10.0.0.1')).toBe(1_000);
    now += 1_000;
    expect(throttle.blockedFor('10.0.0.1')).toBe(0);
    // A new window starts from zero.
    throttle.recordFailure('10.0.0.1');
    expect(throttle.blockedFor('10.0.0.1')).toBe(0);
  });

  it('failures spread over more than a window never block', () => {
    let now = 0;
    const throttle = new AuthThrottle({ maxFailures: 3, windowMs: 1000, now: () => now });
    for (let i = 0; i < 20; i++) {
      throttle.recordFailure('a');
      now += 400;
      expect(throttle.blockedFor('a')).toBe(0);
    }
  });

  it('remembers at most maxAddresses addresses, forgetting the oldest windows first', () => {
    let now = 0;
    const throttle = new AuthThrottle({ maxFailures: 2, windowMs: 60_000, maxAddresses: 100, now: () => now });
    throttle.recordFailure('first');
    throttle.recordFailure('first');
    for (let i = 0; i < 10_000; i++) {
      now += 1;
      throttle.recordFailure(`10.1.${i >> 8}.${i & 255}`);
    }
    expect(throttle.size).toBe(100);
    expect(throttle.blockedFor('first')).toBe(0);
    // The newest addresses are still counted.
    throttle.recordFailure('10.1.39.15');
    expect(throttle.blockedFor('10.1.39.15')).toBeGreaterThan(0);
  });
});

describe('key guessing over HTTP', () => {
  let server: TestServer;
  const ADMIN = 'admin-key-for-throttle-tests';
  afterEach(async () => {
    await server.close();
  });

  it('after 10 wrong keys in a minute an address gets 429 with Retry-After, a right key included; other addresses do not', async () => {
    server = await startTestServer({ env: { GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: ADMIN } });
    const get = (key: string | undefined, remoteAddress = '198.51.100.7') =>
      server.app.inject({ method: 'GET', url: '/api/v1/agents', remoteAddress, headers: key ? { 'x-api-key': key } : {} });
    for (let i = 0; i < 10; i++) expect((await get(`guess-${i}-0000000000000`)).statusCode).toBe(401);
    const blocked = await get('guess-10-000000000000');
    expect(blocked.statusCode).toBe(429);
    expect(blocked.headers['content-type']).toContain('application/problem+json');
    expect(json(blocked)).toMatchObject({ status: 429, error_code: 'too_many_requests' });
    const retryAfter = Number(blocked.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // A right key from the same address is refused too: the answer must not tell guesses apart.
    expect((await get(ADMIN)).statusCode).toBe(429);
    expect((await get(undefined)).statusCode).toBe(429);
    expect((await get(ADMIN, '198.51.100.8')).statusCode).toBe(200);
    // Public routes stay reachable.
    expect((await server.app.inject({ url: '/health', remoteAddress: '198.51.100.7' })).statusCode).toBe(200);
  });

  it('a right key does not reset the count (a holder of one key cannot keep guessing another)', async () => {
    const REGULAR = 'regular-key-for-throttle';
    server = await startTestServer({ env: { GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: ADMIN, GUARD_API_KEYS: REGULAR, GUARD_AUTH_MAX_FAILURES: '4' } });
    const put = (key: string) => call(server.app, 'PUT', '/api/v1/controls', { name: 'x' }, { 'x-api-key': key });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      statuses.push((await put(`admin-guess-${i}-000000000`)).statusCode);
      statuses.push((await put(REGULAR)).statusCode);
    }
    statuses.push((await put('admin-guess-4-000000000')).statusCode);
    expect(statuses).toEqual([401, 403, 401, 403, 401, 403, 401, 429, 429]);
  });
});
