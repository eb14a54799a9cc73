import { describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { loadConfig } from '../../src/server/config.js';
import { serveConfigOf } from '../../cli/commands/serve.js';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1', port: 8000, debug: false, logFormat: 'human', databaseUrl: undefined, apiKeyEnabled: false,
      apiKeys: [], adminApiKeys: [], observabilityEnabled: true, flushIntervalSeconds: 10,
      metricsPrefix: 'guard', bodyLimitBytes: 1_048_576, evaluatorPlugins: [], eventRetentionDays: 30,
      eventBufferSize: 10_000, watchDir: null, requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, maxConnections: 1000,
      authMaxFailures: 10, metricsRequireKey: false,
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.apiKeys)).toBe(true);
  });

  it('reads every variable; DATABASE_URL wins over DB_URL; key lists are trimmed', () => {
    const config = loadConfig({
      HOST: '127.0.0.1', PORT: '0', DEBUG: 'true', DATABASE_URL: 'a.db', DB_URL: 'b.db',
      GUARD_API_KEY_ENABLED: '1', GUARD_API_KEYS: ' regular-key-0001, ,regular-key-0002 ', GUARD_ADMIN_API_KEYS: 'admin-key-000001',
      OBSERVABILITY_ENABLED: 'false', OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '2', VENDOR_API_KEY: 'v',
      PROMETHEUS_METRICS_PREFIX: 'acme', GUARD_BODY_LIMIT_BYTES: '100', GUARD_EVALUATORS: './a.js, ./b.js',
      GUARD_EVENT_RETENTION_DAYS: '7', GUARD_EVENT_BUFFER_SIZE: '50', GUARD_REQUEST_TIMEOUT_MS: '5000',
      GUARD_HEADERS_TIMEOUT_MS: '2000', GUARD_MAX_CONNECTIONS: '64', GUARD_AUTH_MAX_FAILURES: '3', METRICS_REQUIRE_KEY: 'true',
    });
    expect(config).toMatchObject({
      host: '127.0.0.1', port: 0, debug: true, databaseUrl: 'a.db', apiKeyEnabled: true, apiKeys: ['regular-key-0001', 'regular-key-0002'],
      adminApiKeys: ['admin-key-000001'], observabilityEnabled: false, flushIntervalSeconds: 2, vendorApiKey: 'v',
      metricsPrefix: 'acme', bodyLimitBytes: 100, evaluatorPlugins: ['./a.js', './b.js'], eventRetentionDays: 7,
      eventBufferSize: 50, requestTimeoutMs: 5000, headersTimeoutMs: 2000, maxConnections: 64, authMaxFailures: 3,
      metricsRequireKey: true,
    });
    expect(loadConfig({ DB_URL: 'b.db' }).databaseUrl).toBe('b.db');
  });

  it('reads the PostgreSQL timeouts, with their documented defaults', () => {
    expect(loadConfig({})).toMatchObject({ pgStatementTimeoutMs: 10_000, pgQueryTimeoutMs: 15_000, pgConnectTimeoutMs: 5_000 });
    expect(
      loadConfig({ GUARD_PG_STATEMENT_TIMEOUT_MS: '100', GUARD_PG_QUERY_TIMEOUT_MS: '200', GUARD_PG_CONNECT_TIMEOUT_MS: '300' }),
    ).toMatchObject({ pgStatementTimeoutMs: 100, pgQueryTimeoutMs: 200, pgConnectTimeoutMs: 300 });
    expect(() => loadConfig({ GUARD_PG_QUERY_TIMEOUT_MS: '0' })).toThrow(/GUARD_PG_QUERY_TIMEOUT_MS must be a whole number from 1/);
  });

  it('reads the PostgreSQL pool size: 10 unless GUARD_PG_POOL_SIZE says, at least 1', () => {
    expect(loadConfig({}).pgPoolSize).toBe(10);
    expect(loadConfig({ GUARD_PG_POOL_SIZE: '3' }).pgPoolSize).toBe(3);
    expect(() => loadConfig({ GUARD_PG_POOL_SIZE: '0' })).toThrow(/GUARD_PG_POOL_SIZE must be a whole number from 1/);
  });

  it.each([
    ['PORT', 'abc'], ['PORT', '70000'], ['DEBUG', 'sometimes'], ['GUARD_BODY_LIMIT_BYTES', '-1'],
    ['OBSERVABILITY_FLUSH_INTERVAL_SECONDS', 'x'], ['PROMETHEUS_METRICS_PREFIX', 'has space'],
    ['GUARD_REQUEST_TIMEOUT_MS', '0'], ['GUARD_HEADERS_TIMEOUT_MS', 'soon'], ['GUARD_MAX_CONNECTIONS', '0'],
    ['GUARD_AUTH_MAX_FAILURES', '0'], ['METRICS_REQUIRE_KEY', 'maybe'],
  ])('rejects %s=%s naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(UserError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('refuses authentication without keys', () => {
    expect(() => loadConfig({ GUARD_API_KEY_ENABLED: 'true' })).toThrow(/GUARD_API_KEYS/);
    expect(() => loadConfig({ GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: ' , ' })).toThrow(UserError);
  });

  it('refuses a key shorter than 16 characters in one line naming the variable, never the key', () => {
    const attempt = (env: Record<string, string>) => {
      try {
        loadConfig({ GUARD_API_KEY_ENABLED: 'true', ...env });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(attempt({ GUARD_ADMIN_API_KEYS: 'ab' })).toBe(
      'GUARD_ADMIN_API_KEYS holds a key of 2 characters (entry 1): keys must be at least 16 characters; generate one with: openssl rand -hex 32',
    );
    const line = attempt({ GUARD_ADMIN_API_KEYS: 'a-long-enough-admin-key', GUARD_API_KEYS: 'regular-key-long-enough, tiny-secret-15c' });
    expect(line).toMatch(/^GUARD_API_KEYS holds a key of 15 characters \(entry 2\): /);
    expect(line).not.toContain('tiny-secret');
    expect(line).not.toContain('\n');
    // Keys are checked even while authentication is off: turning it on later must not start with a weak key.
    expect(() => loadConfig({ GUARD_API_KEYS: 'short' })).toThrow(/^GUARD_API_KEYS holds a key of 5 characters/);
    expect(attempt({ GUARD_ADMIN_API_KEYS: '0123456789abcdef' })).toBe('accepted');
  });

  it('refuses METRICS_REQUIRE_KEY without authentication, and a header timeout longer than the request timeout', () => {
    expect(() => loadConfig({ METRICS_REQUIRE_KEY: 'true' })).toThrow(/^METRICS_REQUIRE_KEY is true but GUARD_API_KEY_ENABLED is not/);
    expect(() => loadConfig({ GUARD_REQUEST_TIMEOUT_MS: '1000', GUARD_HEADERS_TIMEOUT_MS: '2000' })).toThrow(
      /^GUARD_HEADERS_TIMEOUT_MS \(2000\) is longer than GUARD_REQUEST_TIMEOUT_MS \(1000\)/,
    );
  });
});

describe('guardctl serve options', () => {
  it('flags override the environment', () => {
    const config = serveConfigOf({ host: '127.0.0.1', port: '9000', db: ':memory:', watch: 'controls' }, { PORT: '1', DB_URL: 'x.db' });
    expect(config).toMatchObject({ host: '127.0.0.1', port: 9000, databaseUrl: ':memory:', watchDir: 'controls' });
  });

  it('blames a bad value on what the user typed: the flag, or the variable', () => {
    expect(() => serveConfigOf({ port: 'eighty' }, { PORT: '9000' })).toThrow(/^--port must be a whole number from 0 to 65535, got "eighty"$/);
    expect(() => serveConfigOf({}, { PORT: 'eighty' })).toThrow(/^PORT must be a whole number/);
    expect(() => serveConfigOf({ logFormat: 'xml' }, {})).toThrow(/^--log-format must be one of human, json, got "xml"$/);
  });

  it('refuses a database it cannot open by scheme, without echoing the URL (a password may be in it)', () => {
    const refuse = (options: { db?: string }, env: Record<string, string>) => {
      try {
        serveConfigOf(options, env);
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    expect(refuse({ db: 'mysql://app:s3cret@db/app' }, {})).toMatch(/^--db names a mysql:\/\/ database, which guardctl cannot use: use a SQLite file path/);
    expect(refuse({ db: 'mysql://app:s3cret@db/app' }, {})).not.toContain('s3cret');
    expect(refuse({}, { DATABASE_URL: 'mysql://app:s3cret@db/app' })).toMatch(/^DATABASE_URL names a mysql:\/\/ database/);
    expect(refuse({}, { DB_URL: 'mongodb://app:s3cret@db/app' })).toMatch(/^DB_URL names a mongodb:\/\/ database/);
    for (const fine of ['postgres://u@h/db', 'postgresql://u@h/db', 'sqlite:///tmp/x.db', 'data/guard.db', ':memory:']) {
      expect(refuse({ db: fine }, {})).toBe('accepted');
    }
  });
});
