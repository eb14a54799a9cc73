/**
 * OpenTelemetry settings, read from the standard OTEL_* variables (docs/observability.md,
 * "Tracing"). Tracing is on when an OTLP endpoint is set and OTEL_SDK_DISABLED is not true;
 * a value guardctl cannot use stops the start with one line naming the variable. Pure:
 * it reads the environment object it is given, nothing else.
 */
import { UserError } from '../errors.js';

export const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type SamplerName = (typeof SAMPLERS)[number];

export interface TracingConfig {
  /** Where spans are sent (OTLP/HTTP), the full path included (`.../v1/traces`). */
  readonly endpoint: string;
  /** OTEL_EXPORTER_OTLP_HEADERS then OTEL_EXPORTER_OTLP_TRACES_HEADERS (values may be secrets: never logged). */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  readonly sampler: SamplerName;
  /** The ratio of the traceidratio samplers, 0..1. */
  readonly samplerRatio: number;
  /**
   * How spans are encoded: OTLP/HTTP with protobuf bodies (the OpenTelemetry default, and
   * the cheaper one: faster to encode, and less than half the bytes of JSON to send) or JSON bodies.
   */
  readonly protocol: OtlpProtocol;
  /** An export waits at most this long (OTEL_EXPORTER_OTLP_TIMEOUT, ms). */
  readonly timeoutMs: number;
  /** A span waits at most this long for its batch to go out (OTEL_BSP_SCHEDULE_DELAY, ms). */
  readonly scheduleDelayMs: number;
  /** GUARD_OTEL_INCLUDE_CONTENT: masked messages and excerpts of matches in span events. */
  readonly includeContent: boolean;
}

export type OtlpProtocol = 'http/protobuf' | 'http/json';

type Env = Record<string, string | undefined>;

/** An OTEL_* value guardctl cannot use: `VARIABLE problem: what to do`, on one line. */
export class TracingConfigError extends UserError {
  constructor(
    readonly setting: string,
    readonly problem: string,
    readonly todo: string,
  ) {
    super(`${setting} ${problem}: ${todo}`);
    this.name = 'TracingConfigError';
  }
}

/** The tracing settings, or null when tracing is off (no endpoint, or OTEL_SDK_DISABLED=true). */
export function tracingConfigOf(env: Env): TracingConfig | null {
  const disabled = flag(env, 'OTEL_SDK_DISABLED', false);
  const includeContent = flag(env, 'GUARD_OTEL_INCLUDE_CONTENT', false);
  const endpoint = endpointOf(env);
  if (disabled || endpoint === null) return null;
  const protocol = protocolOf(env);
  const sampler = samplerOf(env);
  return Object.freeze({
    endpoint,
    headers: Object.freeze({ ...headersOf(env, 'OTEL_EXPORTER_OTLP_HEADERS'), ...headersOf(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS') }),
    serviceName: text(env, 'OTEL_SERVICE_NAME') ?? 'guardctl',
    sampler,
    samplerRatio: sampler.endsWith('traceidratio') ? ratioOf(env) : 1,
    protocol,
    timeoutMs: timeoutOf(env),
    scheduleDelayMs: scheduleDelayOf(env),
    includeContent,
  });
}

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const value = text(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new TracingConfigError(name, `must be true or false, got "${env[name]}"`, `set ${name}=true or ${name}=false`);
}

/** The traces endpoint: the signal's own variable as given, else the base one plus `/v1/traces`. */
function endpointOf(env: Env): string | null {
  const own = text(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (own !== undefined) return httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', own);
  const base = text(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (base === undefined) return null;
  const url = httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base);
  return `${url.replace(/\/+$/, '')}/v1/traces`;
}

function httpUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    // The value itself is not shown: an endpoint URL may carry a token.
    throw new TracingConfigError(name, 'is not a URL', `write it as http://host:4318 (the collector's OTLP/HTTP address)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TracingConfigError(name, `must be an http:// or https:// URL, not ${url.protocol}//`, 'guardctl sends OTLP over HTTP, for example http://localhost:4318');
  }
  return value;
}

/** The OTLP/HTTP encoding asked for (the signal's own variable first); gRPC must not be ignored. */
function protocolOf(env: Env): OtlpProtocol {
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL']) {
    const value = text(env, name)?.toLowerCase();
    if (value === undefined) continue;
    if (value === 'http/json' || value === 'http/protobuf') return value;
    throw new TracingConfigError(name, `is "${env[name]}", which guardctl cannot send`, 'guardctl exports OTLP over HTTP: use http/protobuf (the default) or http/json, and the collector\'s HTTP port, 4318 by default');
  }
  return 'http/protobuf';
}

function samplerOf(env: Env): SamplerName {
  const value = text(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase();
  if (value === undefined) return 'parentbased_always_on';
  if ((SAMPLERS as readonly string[]).includes(value)) return value as SamplerName;
  throw new TracingConfigError('OTEL_TRACES_SAMPLER', `names an unknown sampler "${env.OTEL_TRACES_SAMPLER}"`, `use one of ${SAMPLERS.join(', ')}`);
}

function ratioOf(env: Env): number {
  const value = text(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (value === undefined) return 1;
  const ratio = Number(value);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new TracingConfigError('OTEL_TRACES_SAMPLER_ARG', `must be a ratio from 0 to 1, got "${value}"`, 'for example OTEL_TRACES_SAMPLER_ARG=0.01 keeps one trace in a hundred');
  }
  return ratio;
}

function timeoutOf(env: Env): number {
  const value = text(env, 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT') ?? text(env, 'OTEL_EXPORTER_OTLP_TIMEOUT');
  if (value === undefined) return 10_000;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 600_000) {
    throw new TracingConfigError('OTEL_EXPORTER_OTLP_TIMEOUT', `must be a whole number of milliseconds from 1 to 600000, got "${value}"`, 'for example 10000');
  }
  return Number(value);
}

/**
 * 1 s by default, not the specification's 5 s: a span reaches the collector about a second
 * after it ends, and a busy server sends full batches (512 spans) long before either.
 */
function scheduleDelayOf(env: Env): number {
  const value = text(env, 'OTEL_BSP_SCHEDULE_DELAY');
  if (value === undefined) return 1000;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 600_000) {
    throw new TracingConfigError('OTEL_BSP_SCHEDULE_DELAY', `must be a whole number of milliseconds from 1 to 600000, got "${value}"`, 'for example 1000');
  }
  return Number(value);
}

/**
 * `key=value,key2=value2`, values percent-encoded (the OTLP exporter specification). A
 * malformed list is refused without quoting it: header values are credentials.
 */
function headersOf(env: Env, name: string): Record<string, string> {
  const raw = text(env, name);
  if (raw === undefined) return {};
  const headers: Record<string, string> = {};
  raw.split(',').forEach((entry, index) => {
    if (entry.trim() === '') return;
    const at = entry.indexOf('=');
    const key = at < 0 ? '' : entry.slice(0, at).trim();
    const where = `entry ${index + 1}`;
    if (at < 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) {
      throw new TracingConfigError(name, `is malformed (${where} is not key=value with a header name as key)`, 'write it as key1=value1,key2=value2, values percent-encoded');
    }
    let value: string;
    try {
      value = decodeURIComponent(entry.slice(at + 1).trim());
    } catch {
      throw new TracingConfigError(name, `is malformed (${where}: the value's percent-encoding is broken)`, 'encode % as %25 in header values');
    }
    // Node refuses such a header at every export; better to say so once, at start.
    if ([...value].some((c) => c.charCodeAt(0) < 0x20 ? c !== '\t' : c.charCodeAt(0) === 0x7f)) {
      throw new TracingConfigError(name, `is malformed (${where}: the value holds a control character)`, 'header values are one line of text');
    }
    headers[key.toLowerCase()] = value;
  });
  return headers;
}
