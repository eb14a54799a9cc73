import { UserError } from '../errors.js';

/** Everything the server reads from its environment, parsed once and frozen. */
export interface ServerConfig {
  readonly host: string;
  readonly port: number;
  readonly debug: boolean;
  /** DATABASE_URL ?? DB_URL; undefined means the default SQLite file under `.guardctl/`. */
  readonly databaseUrl: string | undefined;
  readonly apiKeyEnabled: boolean;
  readonly apiKeys: readonly string[];
  readonly adminApiKeys: readonly string[];
  readonly observabilityEnabled: boolean;
  readonly flushIntervalSeconds: number;
  readonly vendorApiKey: string | undefined;
  readonly metricsPrefix: string;
  readonly bodyLimitBytes: number;
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
  /** Step recording for `plan --replay` (docs/testing.md): GUARD_RECORD_STEPS, off by default. */
  readonly recordSteps: boolean;
  /** Share of evaluated steps recorded, 0..1 (GUARD_RECORD_SAMPLE_RATE). */
  readonly recordSampleRate: number;
  /** Steps whose redacted JSON is larger are not recorded (GUARD_RECORD_MAX_STEP_BYTES). */
  readonly recordMaxStepBytes: number;
  readonly recordRetentionDays: number;
  /** Extra field names or paths to redact, beside the built-in ones (GUARD_RECORD_REDACT). */
  readonly recordRedact: readonly string[];
}

type Env = Record<string, string | undefined>;

/**
 * Reads the server configuration (SPEC section 1) from `env`. Invalid values throw a
 * UserError naming the variable, so a typo fails at start rather than at first use.
 */
export function loadConfig(env: Env = process.env, overrides: Partial<ServerConfig> = {}): ServerConfig {
  const config: ServerConfig = {
    host: str(env, 'HOST') ?? '0.0.0.0',
    port: int(env, 'PORT', 8000, 0, 65535),
    debug: bool(env, 'DEBUG', false),
    databaseUrl: str(env, 'DATABASE_URL') ?? str(env, 'DB_URL'),
    apiKeyEnabled: bool(env, 'GUARD_API_KEY_ENABLED', false),
    apiKeys: list(env, 'GUARD_API_KEYS'),
    adminApiKeys: list(env, 'GUARD_ADMIN_API_KEYS'),
    observabilityEnabled: bool(env, 'OBSERVABILITY_ENABLED', true),
    flushIntervalSeconds: num(env, 'OBSERVABILITY_FLUSH_INTERVAL_SECONDS', 10, 0.001),
    vendorApiKey: str(env, 'VENDOR_API_KEY'),
    metricsPrefix: prefix(env, 'PROMETHEUS_METRICS_PREFIX', 'guard'),
    bodyLimitBytes: int(env, 'GUARD_BODY_LIMIT_BYTES', 1_048_576, 1, 1024 * 1024 * 1024),
    evaluatorPlugins: list(env, 'GUARD_EVALUATORS'),
    eventRetentionDays: num(env, 'GUARD_EVENT_RETENTION_DAYS', 30, 0.001),
    eventBufferSize: int(env, 'GUARD_EVENT_BUFFER_SIZE', 10_000, 1, 10_000_000),
    nonMatchSampleRate: fraction(env, 'OBSERVABILITY_NON_MATCH_SAMPLE_RATE', 0),
    metricsMaxLabelValues: int(env, 'GUARD_METRICS_MAX_LABEL_VALUES', 1000, 1, 1_000_000),
    watchDir: null,
    syncIntervalMs: int(env, 'GUARD_SYNC_INTERVAL_MS', 2000, 10, 3_600_000),
    recordSteps: bool(env, 'GUARD_RECORD_STEPS', false),
    recordSampleRate: fraction(env, 'GUARD_RECORD_SAMPLE_RATE', 1),
    recordMaxStepBytes: int(env, 'GUARD_RECORD_MAX_STEP_BYTES', 16_384, 64, 64 * 1024 * 1024),
    recordRetentionDays: num(env, 'GUARD_RECORD_RETENTION_DAYS', 7, 0.001),
    recordRedact: list(env, 'GUARD_RECORD_REDACT'),
    ...dropUndefined(overrides),
  };
  checkAuth(config);
  return Object.freeze({
    ...config,
    apiKeys: Object.freeze([...config.apiKeys]),
    adminApiKeys: Object.freeze([...config.adminApiKeys]),
    evaluatorPlugins: Object.freeze([...config.evaluatorPlugins]),
    recordRedact: Object.freeze([...config.recordRedact]),
  });
}

/** Auth on with no keys would lock everyone out; we ship no default keys, so refuse. */
function checkAuth(config: ServerConfig): void {
  if (config.apiKeyEnabled && config.apiKeys.length === 0 && config.adminApiKeys.length === 0) {
    throw new UserError(
      'GUARD_API_KEY_ENABLED is true but neither GUARD_API_KEYS nor GUARD_ADMIN_API_KEYS lists a key',
      'set GUARD_ADMIN_API_KEYS (and GUARD_API_KEYS for read-only clients) to comma-separated secrets, or set GUARD_API_KEY_ENABLED=false for local development',
    );
  }
}

function dropUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function str(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const value = str(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new UserError(`${name} must be true or false, got "${env[name]}"`);
}

function num(env: Env, name: string, fallback: number, min: number): number {
  const value = str(env, name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < min) {
    throw new UserError(`${name} must be a number of at least ${min}, got "${value}"`);
  }
  return parsed;
}

function fraction(env: Env, name: string, fallback: number): number {
  const value = str(env, name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isFinite(parsed) || parsed < 0 || parsed > 1) {
    throw new UserError(`${name} must be a number from 0 to 1, got "${value}"`);
  }
  return parsed;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = str(env, name);
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new UserError(`${name} must be a whole number from ${min} to ${max}, got "${value}"`);
  }
  return Number(value);
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
    throw new UserError(`${name} must be a valid Prometheus metric name prefix, got "${value}"`);
  }
  return value;
}
