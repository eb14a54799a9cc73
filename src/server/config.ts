import { parseWindow } from '../counting/index.js';
import { UserError } from '../errors.js';
import { tracingConfigOf, type TracingConfig } from '../tracing/config.js';
import { allowedHostEntry, defaultAllowedHosts } from './allowed-hosts.js';
import { LOG_FORMATS, type LogFormat } from './logging.js';

/** Everything the server reads from its environment, parsed once and frozen. */
export interface ServerConfig {
  readonly host: string;
  /**
   * Host names and addresses a request's Host header may name, in normal form
   * (allowed-hosts.ts); `*` allows any (GUARD_ALLOWED_HOSTS). Default: the listen address,
   * localhost, 127.0.0.1 and [::1] (on 0.0.0.0 or ::, the machine's addresses and name too).
   */
  readonly allowedHosts: readonly string[];
  readonly port: number;
  readonly debug: boolean;
  /** `human` lines (default) or pino's JSON lines (GUARD_LOG_FORMAT, `serve --log-format`). */
  readonly logFormat: LogFormat;
  /** DATABASE_URL ?? DB_URL; undefined means the default SQLite file under `.guardctl/`. */
  readonly databaseUrl: string | undefined;
  readonly apiKeyEnabled: boolean;
  readonly apiKeys: readonly string[];
  readonly adminApiKeys: readonly string[];
  /** Keys that may read and decide approvals and nothing else (GUARD_APPROVER_API_KEYS, docs/approvals.md). */
  readonly approverApiKeys: readonly string[];
  /** Where each new approval is posted as chat-webhook JSON (GUARD_APPROVAL_WEBHOOK_URL); operator-set only. */
  readonly approvalWebhookUrl: string | null;
  /** How often a waiting approval request looks at the store for a decision made on another replica (GUARD_APPROVAL_POLL_MS). */
  readonly approvalPollMs: number;
  readonly observabilityEnabled: boolean;
  readonly flushIntervalSeconds: number;
  readonly vendorApiKey: string | undefined;
  readonly metricsPrefix: string;
  readonly bodyLimitBytes: number;
  /** Longest a request may take to arrive, headers and body (GUARD_REQUEST_TIMEOUT_MS); answers are not bounded. */
  readonly requestTimeoutMs: number;
  /** Longest the request line and headers may take to arrive (GUARD_HEADERS_TIMEOUT_MS). */
  readonly headersTimeoutMs: number;
  /** Open connections beyond this are closed at once (GUARD_MAX_CONNECTIONS). */
  readonly maxConnections: number;
  /** Wrong or missing keys one address may send per minute before it gets 429 (GUARD_AUTH_MAX_FAILURES). */
  readonly authMaxFailures: number;
  /** `/metrics` needs a regular or admin key (METRICS_REQUIRE_KEY); public by default. */
  readonly metricsRequireKey: boolean;
  /** ES module paths of evaluator plugins (GUARD_EVALUATORS). */
  readonly evaluatorPlugins: readonly string[];
  readonly eventRetentionDays: number;
  readonly eventBufferSize: number;
  /** Share of non-match events also stored as rows, 0..1 (OBSERVABILITY_NON_MATCH_SAMPLE_RATE, default 0). */
  readonly nonMatchSampleRate: number;
  /** Distinct agent/control/evaluator metric label values before the rest become `other` (observability). */
  readonly metricsMaxLabelValues: number;
  /** A controls directory to load and hot-reload; set by `serve --watch`. */
  readonly watchDir: string | null;
  /** Replicas compare the store revision this often, a fallback for lost change notifications (GUARD_SYNC_INTERVAL_MS). */
  readonly syncIntervalMs: number;
  /** PostgreSQL: the server cancels a statement running longer (GUARD_PG_STATEMENT_TIMEOUT_MS). */
  readonly pgStatementTimeoutMs: number;
  /** PostgreSQL: a query without an answer this long fails, even from a database that hangs (GUARD_PG_QUERY_TIMEOUT_MS). */
  readonly pgQueryTimeoutMs: number;
  /** PostgreSQL: connecting, or waiting for a free pool connection, fails after this long (GUARD_PG_CONNECT_TIMEOUT_MS). */
  readonly pgConnectTimeoutMs: number;
  /** PostgreSQL: connections the query pool opens at most (GUARD_PG_POOL_SIZE); two listening connections come on top. */
  readonly pgPoolSize: number;
  /** Keys rate and budget controls count at most (GUARD_COUNTER_MAX_KEYS): memory and table size stay bounded. */
  readonly counterMaxKeys: number;
  /** Longest wait for PostgreSQL to count a step before it is an evaluator error (GUARD_COUNTER_TIMEOUT_MS). */
  readonly counterTimeoutMs: number;
  /** A session is forgotten this long after its last step (GUARD_SESSION_TTL, default 24h; docs/sessions.md). */
  readonly sessionTtlMs: number;
  /** Sessions kept at most (GUARD_SESSION_MAX): at the bound, new sessions are refused (docs/sessions.md). */
  readonly sessionMax: number;
  /** Step recording for `plan --replay` (docs/testing.md): GUARD_RECORD_STEPS, off by default. */
  readonly recordSteps: boolean;
  /** Share of evaluated steps recorded, 0..1 (GUARD_RECORD_SAMPLE_RATE). */
  readonly recordSampleRate: number;
  /** Steps whose redacted JSON is larger are not recorded (GUARD_RECORD_MAX_STEP_BYTES). */
  readonly recordMaxStepBytes: number;
  readonly recordRetentionDays: number;
  /** GUARD_HISTORY_MAX_ENTRIES: change-history entries kept at most (newest first). */
  readonly historyMaxEntries: number;
  /** GUARD_HISTORY_MAX_AGE_DAYS: change-history entries older than this are deleted. */
  readonly historyMaxAgeDays: number;
  /** Extra field names or paths to redact, beside the built-in ones (GUARD_RECORD_REDACT). */
  readonly recordRedact: readonly string[];
  /** OpenTelemetry export (the standard OTEL_* variables); null when tracing is off. */
  readonly tracing: TracingConfig | null;
}

type Env = Record<string, string | undefined>;

/**
 * A setting the server cannot use. `setting` names where the value came from (the
 * variable); `guardctl serve` renames it to the flag when a flag gave the value.
 */
export class ConfigError extends UserError {
  constructor(
    readonly setting: string,
    readonly problem: string,
    /** What to do, when the problem does not say it already; the same line, after a colon. */
    readonly todo?: string,
  ) {
    super(`${setting} ${problem}${todo ? `: ${todo}` : ''}`);
    this.name = 'ConfigError';
  }

  /** The same problem, blamed on another name (a flag instead of its variable). */
  renamed(setting: string): ConfigError {
    return new ConfigError(setting, this.problem, this.todo);
  }
}

/**
 * PostgreSQL timeouts (docs/storage.md). The query timeout is the client's own clock, so
 * it also ends waits on a database that answers nothing at all; it is longer than the
 * statement timeout so that a merely slow statement is cancelled by the server first,
 * which keeps its connection usable.
 */
export const PG_TIMEOUT_DEFAULTS = { statementMs: 10_000, queryMs: 15_000, connectMs: 5_000 } as const;

/** URL schemes a database setting may use; anything else with `://` is a mistake worth stopping for. */
const DATABASE_SCHEMES = /^(postgres|postgresql|sqlite)$/i;

/**
 * Reads the server configuration (SPEC section 1) from `env`. Invalid values throw a
 * UserError naming the variable, so a typo fails at start rather than at first use.
 */
export function loadConfig(env: Env = process.env, overrides: Partial<ServerConfig> = {}): ServerConfig {
  const base: ServerConfig = {
    host: str(env, 'HOST') ?? '127.0.0.1',
    // Filled in below, from the listen address the overrides may still change.
    allowedHosts: [],
    port: int(env, 'PORT', 8000, 0, 65535),
    debug: bool(env, 'DEBUG', false),
    logFormat: oneOf(env, 'GUARD_LOG_FORMAT', LOG_FORMATS, 'human'),
    databaseUrl: databaseUrl(env),
    apiKeyEnabled: bool(env, 'GUARD_API_KEY_ENABLED', false),
    apiKeys: list(env, 'GUARD_API_KEYS'),
    adminApiKeys: list(env, 'GUARD_ADMIN_API_KEYS'),
    approverApiKeys: list(env, 'GUARD_APPROVER_API_KEYS'),
    approvalWebhookUrl: webhookUrl(env, 'GUARD_APPROVAL_WEBHOOK_URL'),
    approvalPollMs: int(env, 'GUARD_APPROVAL_POLL_MS', 250, 10, 60_000),
    observabilityEnabled: bool(env, 'OBSERVABILITY_ENABLED', true),
    flushIntervalSeconds: num(env, 'OBSERVABILITY_FLUSH_INTERVAL_SECONDS', 10, 0.001),
    vendorApiKey: str(env, 'VENDOR_API_KEY'),
    metricsPrefix: prefix(env, 'PROMETHEUS_METRICS_PREFIX', 'guard'),
    bodyLimitBytes: int(env, 'GUARD_BODY_LIMIT_BYTES', 1_048_576, 1, 1024 * 1024 * 1024),
    requestTimeoutMs: int(env, 'GUARD_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000),
    headersTimeoutMs: int(env, 'GUARD_HEADERS_TIMEOUT_MS', 10_000, 100, 3_600_000),
    maxConnections: int(env, 'GUARD_MAX_CONNECTIONS', 1000, 1, 1_000_000),
    authMaxFailures: int(env, 'GUARD_AUTH_MAX_FAILURES', 10, 1, 1_000_000),
    metricsRequireKey: bool(env, 'METRICS_REQUIRE_KEY', false),
    evaluatorPlugins: list(env, 'GUARD_EVALUATORS'),
    eventRetentionDays: num(env, 'GUARD_EVENT_RETENTION_DAYS', 30, 0.001),
    eventBufferSize: int(env, 'GUARD_EVENT_BUFFER_SIZE', 10_000, 1, 10_000_000),
    nonMatchSampleRate: fraction(env, 'OBSERVABILITY_NON_MATCH_SAMPLE_RATE', 0),
    metricsMaxLabelValues: int(env, 'GUARD_METRICS_MAX_LABEL_VALUES', 1000, 1, 1_000_000),
    watchDir: null,
    syncIntervalMs: int(env, 'GUARD_SYNC_INTERVAL_MS', 2000, 10, 3_600_000),
    pgStatementTimeoutMs: int(env, 'GUARD_PG_STATEMENT_TIMEOUT_MS', PG_TIMEOUT_DEFAULTS.statementMs, 1, 3_600_000),
    pgQueryTimeoutMs: int(env, 'GUARD_PG_QUERY_TIMEOUT_MS', PG_TIMEOUT_DEFAULTS.queryMs, 1, 3_600_000),
    pgConnectTimeoutMs: int(env, 'GUARD_PG_CONNECT_TIMEOUT_MS', PG_TIMEOUT_DEFAULTS.connectMs, 1, 3_600_000),
    pgPoolSize: int(env, 'GUARD_PG_POOL_SIZE', 10, 1, 1000),
    counterMaxKeys: int(env, 'GUARD_COUNTER_MAX_KEYS', 100_000, 1, 100_000_000),
    counterTimeoutMs: int(env, 'GUARD_COUNTER_TIMEOUT_MS', 2000, 10, 60_000),
    sessionTtlMs: duration(env, 'GUARD_SESSION_TTL', 86_400_000),
    sessionMax: int(env, 'GUARD_SESSION_MAX', 100_000, 1, 100_000_000),
    recordSteps: bool(env, 'GUARD_RECORD_STEPS', false),
    recordSampleRate: fraction(env, 'GUARD_RECORD_SAMPLE_RATE', 1),
    recordMaxStepBytes: int(env, 'GUARD_RECORD_MAX_STEP_BYTES', 16_384, 64, 64 * 1024 * 1024),
    recordRetentionDays: num(env, 'GUARD_RECORD_RETENTION_DAYS', 7, 0.001),
    historyMaxEntries: int(env, 'GUARD_HISTORY_MAX_ENTRIES', 100_000, 1, 1_000_000_000),
    historyMaxAgeDays: num(env, 'GUARD_HISTORY_MAX_AGE_DAYS', 365, 0.001),
    recordRedact: list(env, 'GUARD_RECORD_REDACT'),
    tracing: tracingConfigOf(env),
    ...dropUndefined(overrides),
  };
  const config: ServerConfig = overrides.allowedHosts === undefined ? { ...base, allowedHosts: allowedHosts(env, base.host) } : base;
  checkAuth(config);
  checkTimeouts(config);
  return Object.freeze({
    ...config,
    allowedHosts: Object.freeze([...config.allowedHosts]),
    apiKeys: Object.freeze([...config.apiKeys]),
    adminApiKeys: Object.freeze([...config.adminApiKeys]),
    approverApiKeys: Object.freeze([...config.approverApiKeys]),
    evaluatorPlugins: Object.freeze([...config.evaluatorPlugins]),
    recordRedact: Object.freeze([...config.recordRedact]),
  });
}

/** GUARD_ALLOWED_HOSTS when set (it replaces the default), else the default for the listen address. */
function allowedHosts(env: Env, listenHost: string): string[] {
  const entries = list(env, 'GUARD_ALLOWED_HOSTS');
  if (entries.length === 0) return defaultAllowedHosts(listenHost);
  const hosts: string[] = [];
  for (const entry of entries) {
    const parsed = allowedHostEntry(entry);
    if ('problem' in parsed) {
      throw new ConfigError('GUARD_ALLOWED_HOSTS', `holds ${parsed.problem}`, 'list host names and addresses separated by commas, or * to allow any Host');
    }
    if (!hosts.includes(parsed.host)) hosts.push(parsed.host);
  }
  return hosts;
}

/** Shorter keys can be guessed; a key is a secret, not a password someone types. */
export const MIN_API_KEY_LENGTH = 16;

/** Auth on with no keys would lock everyone out; we ship no default keys, so refuse. */
function checkAuth(config: ServerConfig): void {
  if (config.apiKeyEnabled && config.apiKeys.length === 0 && config.adminApiKeys.length === 0) {
    throw new ConfigError(
      'GUARD_API_KEY_ENABLED',
      'is true but neither GUARD_API_KEYS nor GUARD_ADMIN_API_KEYS lists a key',
      'set GUARD_ADMIN_API_KEYS (and GUARD_API_KEYS for read-only clients) to comma-separated secrets, or GUARD_API_KEY_ENABLED=false for local development',
    );
  }
  const classes = [['GUARD_API_KEYS', config.apiKeys], ['GUARD_ADMIN_API_KEYS', config.adminApiKeys], ['GUARD_APPROVER_API_KEYS', config.approverApiKeys]] as const;
  for (const [name, keys] of classes) {
    const short = keys.findIndex((key) => key.length < MIN_API_KEY_LENGTH);
    const key = keys[short];
    if (key === undefined) continue;
    // The key itself is never shown: only where it is and how long it is.
    throw new ConfigError(
      name,
      `holds a key of ${key.length} character${key.length === 1 ? '' : 's'} (entry ${short + 1})`,
      `keys must be at least ${MIN_API_KEY_LENGTH} characters; generate one with: openssl rand -hex 32`,
    );
  }
  if (config.metricsRequireKey && !config.apiKeyEnabled) {
    throw new ConfigError(
      'METRICS_REQUIRE_KEY',
      'is true but GUARD_API_KEY_ENABLED is not, so no key could be required',
      'set GUARD_API_KEY_ENABLED=true with keys, or METRICS_REQUIRE_KEY=false',
    );
  }
}

/** Node refuses a header timeout longer than the request timeout that contains it. */
function checkTimeouts(config: ServerConfig): void {
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    throw new ConfigError(
      'GUARD_HEADERS_TIMEOUT_MS',
      `(${config.headersTimeoutMs}) is longer than GUARD_REQUEST_TIMEOUT_MS (${config.requestTimeoutMs})`,
      'the headers are part of the request: make it at most the request timeout',
    );
  }
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** An http(s) URL without credentials in it (they would show in logs and errors); null when unset. */
function webhookUrl(env: Env, name: string): string | null {
  const raw = str(env, name);
  if (raw === undefined) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'is not a URL', 'give the chat incoming-webhook address, for example https://hooks.example.com/services/...');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(name, `uses ${url.protocol}`, 'use an http or https URL');
  if (url.username !== '' || url.password !== '') throw new ConfigError(name, 'holds a user name or password', 'put the secret in the path or query, as chat webhooks do');
  return url.toString();
}

function str(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/** DATABASE_URL, else DB_URL; a scheme guardctl cannot open (mysql://, ...) stops the start here. */
function databaseUrl(env: Env): string | undefined {
  const name = str(env, 'DATABASE_URL') !== undefined ? 'DATABASE_URL' : 'DB_URL';
  const value = str(env, name);
  const scheme = value === undefined ? undefined : /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1];
  if (scheme !== undefined && !DATABASE_SCHEMES.test(scheme)) {
    // Only the scheme is shown: the rest of a URL may hold a password.
    throw new ConfigError(
      name,
      `names a ${scheme}:// database, which guardctl cannot use`,
      'use a SQLite file path (or sqlite:<path>, :memory:) or a postgres:// URL (docs/deployment.md)',
    );
  }
  return value;
}

function oneOf<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const value = str(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (!(choices as readonly string[]).includes(value)) throw new ConfigError(name, `must be one of ${choices.join(', ')}, got "${env[name]}"`);
  return value as T;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const value = str(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(name, `must be true or false, got "${env[name]}"`);
}

function num(env: Env, name: string, fallback: number, min: number): number {
  const value = str(env, name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < min) {
    throw new ConfigError(name, `must be a number of at least ${min}, got "${value}"`);
  }
  return parsed;
}

function fraction(env: Env, name: string, fallback: number): number {
  const value = str(env, name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0 || parsed > 1) {
    throw new ConfigError(name, `must be a number from 0 to 1, got "${value}"`);
  }
  return parsed;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = str(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${value}"`);
  }
  return Number(value);
}

/** A duration as windows are written (30s, 10m, 24h, 7d), at most 30 days. */
function duration(env: Env, name: string, fallback: number): number {
  const value = str(env, name);
  if (value === undefined) return fallback;
  const parsed = parseWindow(value);
  if (typeof parsed === 'string') throw new ConfigError(name, `must be a duration such as 30m, 24h or 7d (at most 30d), got "${value}"`);
  return parsed;
}

function list(env: Env, name: string): string[] {
  return (env[name] ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

function prefix(env: Env, name: string, fallback: string): string {
  const value = str(env, name);
  if (value === undefined) return fallback;
  if (!/^[a-zA-Z_:][a-zA-Z0-9_:]*$/.test(value)) {
    throw new ConfigError(name, `must be a valid Prometheus metric name prefix, got "${value}"`);
  }
  return value;
}
