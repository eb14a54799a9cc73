/**
 * guardctl's tracer without a server: the samplers' decisions, the bounded queue and its
 * drops, a collector that refuses, hangs or is gone, and the OTLP/HTTP requests it gets
 * (a real receiver on a free port).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tracingConfigOf, type TracingConfig } from '../../src/tracing/config.js';
import { samplerOf, traceIdRatioSampler } from '../../src/tracing/sampler.js';
import { createSpanExporter, MAX_QUEUED_SPANS, BATCH_SIZE } from '../../src/tracing/span-export.js';
import { nowNs, type SpanData } from '../../src/tracing/span.js';
import { startTracing, type Tracing } from '../../src/tracing/start.js';
import type { RemoteParent } from '../../src/tracing/trace-context.js';
import { startOtlpReceiver, type OtlpReceiver } from './otlp-receiver.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function receiver(): Promise<OtlpReceiver> {
  const r = await startOtlpReceiver();
  cleanups.push(() => r.close());
  return r;
}

async function tracing(env: Record<string, string>): Promise<Tracing> {
  const t = await startTracing(tracingConfigOf(env) as TracingConfig, { serviceVersion: '9.9.9' });
  cleanups.push(() => t.shutdown(100));
  return t;
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const parentOf = (flags: number): RemoteParent => ({ traceId: TRACE, spanId: '00f067aa0ba90001', traceFlags: flags, traceState: undefined });
const sampledParent = parentOf(1);
const unsampledParent = parentOf(0);

describe('samplers', () => {
  const table: Array<[string, boolean, boolean, boolean]> = [
    // sampler, new trace, sampled parent, unsampled parent
    ['always_on', true, true, true],
    ['always_off', false, false, false],
    ['parentbased_always_on', true, true, false],
    ['parentbased_always_off', false, true, false],
  ];
  it.each(table)('%s decides a new trace %s, under a sampled parent %s, under an unsampled one %s', (name, root, underSampled, underUnsampled) => {
    const sample = samplerOf(name as 'always_on', 1);
    expect([sample(null, TRACE), sample(sampledParent, TRACE), sample(unsampledParent, TRACE)]).toEqual([root, underSampled, underUnsampled]);
  });

  it('traceidratio keeps a trace when its last 56 bits reach (1 - ratio) * 2^56, the same way in every service', () => {
    const half = traceIdRatioSampler(0.5);
    expect(half('ffffffffffffffffff80000000000000')).toBe(true);
    expect(half('0000000000000000007fffffffffffff')).toBe(false);
    // The high bits of the trace id play no part.
    expect(half('ffffffffffffffffff7fffffffffffff')).toBe(false);
    const never = traceIdRatioSampler(0);
    const always = traceIdRatioSampler(1);
    expect([never('ffffffffffffffffffffffffffffffff'), always('00000000000000000000000000000001')]).toEqual([false, true]);
    // A span with a parent under plain traceidratio is decided by the trace id, not the parent's flag.
    const ratio = samplerOf('traceidratio', 0.5);
    expect(ratio(unsampledParent, 'ffffffffffffffffff80000000000000')).toBe(true);
    expect(ratio(sampledParent, '0000000000000000000000000000000f')).toBe(false);
    const parentRatio = samplerOf('parentbased_traceidratio', 0);
    expect([parentRatio(null, 'ffffffffffffffffffffffffffffffff'), parentRatio(sampledParent, TRACE), parentRatio(unsampledParent, TRACE)]).toEqual([false, true, false]);
  });

  it('a tracer under traceidratio 0.25 keeps about a quarter of new traces, and only those the rule keeps', async () => {
    const t = await tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' });
    const kept = Array.from({ length: 4000 }, () => t.startSpan('x', 0, null)).filter((s) => s.isRecording());
    expect(kept.length).toBeGreaterThan(800);
    expect(kept.length).toBeLessThan(1200);
    expect(kept.every((s) => s.spanContext().traceId.slice(-14) >= 'c0000000000000')).toBe(true);
  });
});

function span(i: number): SpanData {
  const start = nowNs();
  return { name: `s${i}`, kind: 0, traceId: TRACE, spanId: '00f067aa0ba90002', parentSpanId: undefined, traceState: undefined, start, end: start, attributes: { i }, events: [], status: { code: 0 } };
}

const settings = (endpoint: string, timeoutMs = 10_000) => ({
  endpoint,
  headers: { authorization: 'Bearer s3cret' },
  protocol: 'http/protobuf' as const,
  timeoutMs,
  scheduleDelayMs: 1000,
  resource: { 'service.name': 'guard-test' },
  scopeName: 'guardctl',
  scopeVersion: undefined,
});

describe('the export queue', () => {
  it('holds one batch in flight and MAX_QUEUED_SPANS waiting; the rest is dropped and counted as queue_full', async () => {
    const slow = await receiver();
    slow.delayMs = 60_000;
    const exporter = createSpanExporter(settings(`${slow.url}/v1/traces`));
    cleanups.push(() => exporter.stop());
    for (let i = 0; i < 3000; i++) exporter.onEnd(span(i));
    expect(exporter.dropped()).toEqual({ queue_full: 3000 - BATCH_SIZE - MAX_QUEUED_SPANS, export_failed: 0 });
  });

  it('counts a batch the collector refuses (HTTP 500) or cannot be reached for as export_failed', async () => {
    const refusing = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(500).end());
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => refusing.close(() => resolve())));
    const exporter = createSpanExporter(settings(`http://127.0.0.1:${(refusing.address() as AddressInfo).port}/v1/traces`));
    cleanups.push(() => exporter.stop());
    for (let i = 0; i < 30; i++) exporter.onEnd(span(i));
    await exporter.flush();
    expect(exporter.dropped()).toEqual({ queue_full: 0, export_failed: 30 });

    const gone = await startOtlpReceiver();
    await gone.close();
    const unreachable = createSpanExporter(settings(`${gone.url}/v1/traces`));
    cleanups.push(() => unreachable.stop());
    for (let i = 0; i < 7; i++) unreachable.onEnd(span(i));
    await unreachable.flush();
    expect(unreachable.dropped()).toEqual({ queue_full: 0, export_failed: 7 });
  });

  it('counts a batch whose request Node refuses to make (a header value past Latin-1) as export_failed, and goes on', async () => {
    const otlp = await receiver();
    const exporter = createSpanExporter({ ...settings(`${otlp.url}/v1/traces`), headers: { 'x-key': '日本' } });
    cleanups.push(() => exporter.stop());
    exporter.onEnd(span(1));
    await exporter.flush();
    exporter.onEnd(span(2));
    await exporter.flush();
    expect(exporter.dropped()).toEqual({ queue_full: 0, export_failed: 2 });
    expect(otlp.spans).toEqual([]);
  });

  it('counts a batch the collector does not answer within the timeout as export_failed', async () => {
    const slow = await receiver();
    slow.delayMs = 60_000;
    const exporter = createSpanExporter(settings(`${slow.url}/v1/traces`, 200));
    cleanups.push(() => exporter.stop());
    exporter.onEnd(span(1));
    // The collector answers after a minute, past this test's time limit: the flush coming
    // back at all shows the 200 ms timeout ended the export.
    await exporter.flush();
    expect(exporter.dropped().export_failed).toBe(1);
  });
});

describe('the export schedule', () => {
  afterEach(() => void vi.useRealTimers());

  it('sends what waits scheduleDelayMs (OTEL_BSP_SCHEDULE_DELAY) after the first span, not before', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const otlp = await receiver();
    const exporter = createSpanExporter({ ...settings(`${otlp.url}/v1/traces`), scheduleDelayMs: 5000 });
    cleanups.push(() => exporter.stop());
    exporter.onEnd(span(1));
    vi.advanceTimersByTime(4999);
    exporter.onEnd(span(2));
    vi.advanceTimersByTime(1);
    // Sent once, together: at 1 s (the default) the first would have gone alone.
    await otlp.waitFor((spans) => spans.length === 2);
    expect(otlp.encodings).toEqual(['protobuf']);
    expect(otlp.spans.map((s) => s.name)).toEqual(['s1', 's2']);
  });
});

describe('a tracer exporting to a collector', () => {
  it('sends the configured headers and protobuf bodies with the resource, the scope and the spans', async () => {
    const otlp = await receiver();
    const t = await tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: `${otlp.url}/`, OTEL_TRACES_SAMPLER: 'always_on', OTEL_SERVICE_NAME: 'svc', OTEL_EXPORTER_OTLP_HEADERS: 'x-token=a%20b' });
    const s = t.startSpan('guardctl.reload', 0, sampledParent);
    s.setAttributes({ 'guardctl.reload.result': 'success' });
    s.end();
    // Ended twice, changed after the end: still one span, as it was.
    s.setAttributes({ 'guardctl.reload.result': 'changed' });
    s.end();
    const root = t.tracer.startSpan('guardctl.apply', { kind: 0, attributes: { a: 1 } });
    root.end();
    await t.forceFlush();
    expect(otlp.errors).toEqual([]);
    expect(otlp.encodings).toEqual(['protobuf']);
    expect(otlp.headers[0]).toMatchObject({ 'x-token': 'a b', 'content-type': 'application/x-protobuf' });
    expect(otlp.spans.map((x) => [x.name, x.parentSpanId, x.attributes])).toEqual([
      ['guardctl.reload', '00f067aa0ba90001', { 'guardctl.reload.result': 'success' }],
      ['guardctl.apply', '', { a: 1 }],
    ]);
    expect(otlp.spans[0]!.resource).toEqual({ 'service.name': 'svc', 'service.version': '9.9.9' });
  });

  it('merges attributes set twice without writing into the object first given', async () => {
    const otlp = await receiver();
    const t = await tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'always_on' });
    const first = { a: 1, b: 'x' };
    const s = t.startSpan('s', 0, null);
    s.setAttributes(first);
    s.setAttributes({ b: 'y', c: true });
    s.end();
    await t.forceFlush();
    expect(first).toEqual({ a: 1, b: 'x' });
    expect(otlp.spans[0]!.attributes).toEqual({ a: 1, b: 'y', c: true });
  });

  it('sends http/json bodies as application/json', async () => {
    const otlp = await receiver();
    const t = await tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: 'always_on', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    const s = t.startSpan('guardctl.evaluate', 1, { ...sampledParent, traceState: 'v=1' });
    s.addEvent('guardctl.control.matched', { 'guardctl.control.id': 3 });
    s.setStatus({ code: 2, message: 'evaluator error' });
    s.end();
    await t.forceFlush();
    expect(otlp.headers[0]!['content-type']).toBe('application/json');
    expect(otlp.spans[0]).toMatchObject({ name: 'guardctl.evaluate', kind: 2, traceId: TRACE, traceState: 'v=1', status: { code: 2, message: 'evaluator error' }, events: [{ name: 'guardctl.control.matched', attributes: { 'guardctl.control.id': 3 } }] });
  });

  it('shuts down within its timeout when the collector hangs, and takes no spans after', async () => {
    const slow = await receiver();
    slow.delayMs = 120_000;
    // The export alone would wait a minute, past this test's time limit: the shutdown coming
    // back at all shows its own 300 ms timeout ended it.
    const t = await startTracing(tracingConfigOf({ OTEL_EXPORTER_OTLP_ENDPOINT: slow.url, OTEL_TRACES_SAMPLER: 'always_on', OTEL_EXPORTER_OTLP_TIMEOUT: '60000' })!);
    for (let i = 0; i < 10; i++) t.startSpan('x', 0, null).end();
    const started = performance.now();
    await t.shutdown(300);
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    // The batch the collector held is abandoned, and counted; a span after the stop is not taken.
    await expect.poll(() => t.dropped()).toEqual({ queue_full: 0, export_failed: 10 });
    t.startSpan('late', 0, null).end();
    await t.forceFlush();
    expect(t.dropped()).toEqual({ queue_full: 0, export_failed: 10 });
    expect(slow.spans.map((x) => x.name)).not.toContain('late');
  });
});
