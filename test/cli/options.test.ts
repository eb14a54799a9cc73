import { describe, expect, it } from 'vitest';
import { ConnectionError } from '../../src/client/index.js';
import { ApiError, UserError } from '../../src/errors.js';
import { DEFAULT_SERVER, connectionOf, explainServerError, parseDuration } from '../../cli/options.js';

describe('connectionOf', () => {
  it('prefers flags over the environment over the default', () => {
    expect(connectionOf({}, {})).toMatchObject({ serverUrl: DEFAULT_SERVER, apiKey: undefined, timeoutMs: 30_000, explicit: false });
    expect(connectionOf({}, { GUARD_URL: 'http://env:1/', GUARD_API_KEY: 'k1' })).toMatchObject({ serverUrl: 'http://env:1', apiKey: 'k1', explicit: true });
    expect(connectionOf({ server: 'http://flag:2', apiKey: 'k2', timeout: '5s' }, { GUARD_URL: 'http://env:1', GUARD_API_KEY: 'k1' })).toMatchObject({
      serverUrl: 'http://flag:2', apiKey: 'k2', timeoutMs: 5000,
    });
  });

  it('refuses a server that is not an http(s) URL', () => {
    expect(() => connectionOf({ server: 'localhost:8000' }, {})).toThrow(UserError);
  });
});

describe('parseDuration', () => {
  it.each([['30s', 30_000], ['500ms', 500], ['2m', 120_000], ['7', 7000], ['1.5s', 1500]])('%s -> %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
  it('refuses nonsense and zero', () => {
    expect(() => parseDuration('soon')).toThrow(UserError);
    expect(() => parseDuration('0s')).toThrow(UserError);
  });
});

describe('explainServerError', () => {
  const connection = connectionOf({ server: 'http://127.0.0.1:9' }, {});
  it('turns a refused connection, a timeout, 401 and 403 into one line that says what to do', () => {
    const cases: Array<[unknown, RegExp]> = [
      [new ConnectionError('GET', 'http://127.0.0.1:9/x', 'ECONNREFUSED', 'refused'), /cannot reach the server at http:\/\/127\.0\.0\.1:9.*guardctl serve/],
      [new ConnectionError('GET', 'http://127.0.0.1:9/x', 'TIMEOUT', 'slow'), /did not answer within 30s.*--timeout/],
      [new ApiError(401, null, 'GET', 'http://127.0.0.1:9/x'), /401.*--api-key or GUARD_API_KEY/],
      [new ApiError(403, null, 'PUT', 'http://127.0.0.1:9/x'), /403.*GUARD_ADMIN_API_KEYS/],
    ];
    for (const [error, pattern] of cases) {
      const out = explainServerError(error, connection);
      expect(out).toBeInstanceOf(UserError);
      expect((out as UserError).message).toMatch(pattern);
      expect((out as UserError).message).not.toContain('\n');
    }
  });
  it('passes other errors through', () => {
    const error = new ApiError(422, { detail: 'bad' }, 'PUT', 'u');
    expect(explainServerError(error, connection)).toBe(error);
  });
});
