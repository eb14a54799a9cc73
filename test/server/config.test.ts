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
      eventBufferSize: 10_000, watchDir: null,
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.apiKeys)).toBe(true);
  });

  it('reads every variable; DATABASE_URL wins over DB_URL; key lists are trimmed', () => {
    const config = loadConfig({
      HOST: '127.0.0.1', PORT: '0', DEBUG: 'true', DATABASE_URL: 'a.db', DB_URL: 'b.db',
      GUARD_API_KEY_ENABLED: '1', GUARD_API_KEYS: ' k1, ,k2 ', GUARD_ADMIN_API_KEYS: 'a1',
      OBSERVABILITY_ENABLED: 'false', OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '2', VENDOR_API_KEY: 'v',
      PROMETHEUS_METRICS_PREFIX: 'acme', GUARD_BODY_LIMIT_BYTES: '100', GUARD_EVALUATORS: './a.js, ./b.js',
      GUARD_EVENT_RETENTION_DAYS: '7', GUARD_EVENT_BUFFER_SIZE: '50',
    });
    expect(config).toMatchObject({
      host: '127.0.0.1', port: 0, debug: true, databaseUrl: 'a.db', apiKeyEnabled: true, apiKeys: ['k1', 'k2'],
      adminApiKeys: ['a1'], observabilityEnabled: false, flushIntervalSeconds: 2, vendorApiKey: 'v',
      metricsPrefix: 'acme', bodyLimitBytes: 100, evaluatorPlugins: ['./a.js', './b.js'], eventRetentionDays: 7,
      eventBufferSize: 50,
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

  it.each([
    ['PORT', 'abc'], ['PORT', '70000'], ['DEBUG', 'sometimes'], ['GUARD_BODY_LIMIT_BYTES', '-1'],
    ['OBSERVABILITY_FLUSH_INTERVAL_SECONDS', 'x'], ['PROMETHEUS_METRICS_PREFIX', 'has space'],
  ])('rejects %s=%s naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(UserError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });

  it('refuses authentication without keys', () => {
    expect(() => loadConfig({ GUARD_API_KEY_ENABLED: 'true' })).toThrow(/GUARD_API_KEYS/);
    expect(() => loadConfig({ GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: ' , ' })).toThrow(UserError);
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
