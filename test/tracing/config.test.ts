import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/server/config.js';
import { tracingConfigOf, TracingConfigError } from '../../src/tracing/config.js';

const errorOf = (env: Record<string, string>) => {
  try {
    tracingConfigOf(env);
  } catch (error) {
    return error;
  }
  throw new Error('no error');
};

describe('tracing settings (OTEL_*)', () => {
  it('are off without an endpoint, or with OTEL_SDK_DISABLED=true', () => {
    expect(tracingConfigOf({})).toBeNull();
    expect(tracingConfigOf({ OTEL_TRACES_SAMPLER: 'always_on' })).toBeNull();
    expect(tracingConfigOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeNull();
    expect(loadConfig({}).tracing).toBeNull();
  });

  it('read the standard variables, with the standard defaults', () => {
    expect(tracingConfigOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toEqual({
      endpoint: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: 'guardctl',
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      protocol: 'http/protobuf',
      timeoutMs: 10_000,
      scheduleDelayMs: 1000,
      includeContent: false,
    });
    expect(
      tracingConfigOf({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector.example/otlp/traces',
        OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20t0ken, x-team = guards',
        OTEL_SERVICE_NAME: 'guard-prod',
        OTEL_TRACES_SAMPLER: 'TraceIdRatio',
        OTEL_TRACES_SAMPLER_ARG: '0.01',
        GUARD_OTEL_INCLUDE_CONTENT: 'true',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '5000',
      }),
    ).toMatchObject({
      endpoint: 'https://collector.example/otlp/traces',
      headers: { authorization: 'Bearer t0ken', 'x-team': 'guards' },
      serviceName: 'guard-prod',
      sampler: 'traceidratio',
      samplerRatio: 0.01,
      protocol: 'http/json',
      scheduleDelayMs: 5000,
      includeContent: true,
    });
  });

  it('take the traces protocol before the general one', () => {
    const base = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingConfigOf({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' })?.protocol).toBe('http/protobuf');
    expect(tracingConfigOf({ ...base, OTEL_EXPORTER_OTLP_PROTOCOL: 'HTTP/JSON' })?.protocol).toBe('http/json');
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, 'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, not collector://: guardctl sends OTLP over HTTP, for example http://localhost:4318'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a URL: write it as http://host:4318 (the collector\'s OTLP/HTTP address)'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER names an unknown sampler "sometimes": use one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' }, 'OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got "1.5": for example OTEL_TRACES_SAMPLER_ARG=0.01 keeps one trace in a hundred'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' }, 'OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got "half": for example OTEL_TRACES_SAMPLER_ARG=0.01 keeps one trace in a hundred'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=s3cret,broken' }, 'OTEL_EXPORTER_OTLP_HEADERS is malformed (entry 2 is not key=value with a header name as key): write it as key1=value1,key2=value2, values percent-encoded'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'api-key=%E0%A4%A' }, 'OTEL_EXPORTER_OTLP_HEADERS is malformed (entry 1: the value\'s percent-encoding is broken): encode % as %25 in header values'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL is "grpc", which guardctl cannot send: guardctl exports OTLP over HTTP: use http/protobuf (the default) or http/json, and the collector\'s HTTP port, 4318 by default'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_SCHEDULE_DELAY: '1s' }, 'OTEL_BSP_SCHEDULE_DELAY must be a whole number of milliseconds from 1 to 600000, got "1s": for example 1000'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_BSP_SCHEDULE_DELAY: '0' }, 'OTEL_BSP_SCHEDULE_DELAY must be a whole number of milliseconds from 1 to 600000, got "0": for example 1000'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'maybe' }, 'OTEL_SDK_DISABLED must be true or false, got "maybe": set OTEL_SDK_DISABLED=true or OTEL_SDK_DISABLED=false'],
  ])('refuse %j with one line', (env, line) => {
    const error = errorOf(env);
    expect(error).toBeInstanceOf(TracingConfigError);
    expect((error as Error).message).toBe(line);
    expect((error as Error).message).not.toContain('\n');
    expect((error as Error).message).not.toContain('s3cret');
  });

  it('stop loadConfig, so `guardctl serve` refuses to start', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://c' })).toThrow(/^OTEL_EXPORTER_OTLP_ENDPOINT must be an http/);
  });
});
