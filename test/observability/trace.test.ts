import { describe, expect, it } from 'vitest';
import { traceIdsFromHeaders } from '../../src/observability/trace.js';
import { randomSpanId, randomTraceId } from '../../src/tracing/random-ids.js';

describe('traceIdsFromHeaders', () => {
  it('reads a W3C traceparent', () => {
    const ids = traceIdsFromHeaders({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' });
    expect(ids).toEqual({ trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', span_id: '00f067aa0ba902b7' });
  });

  it('reads x-trace-id and x-span-id', () => {
    expect(traceIdsFromHeaders({ 'x-trace-id': 'run-42', 'x-span-id': 'step-3' })).toEqual({ trace_id: 'run-42', span_id: 'step-3' });
  });

  it('generates ids when none (or garbage) is sent', () => {
    const ids = traceIdsFromHeaders({ 'x-trace-id': 'has spaces and\nnewlines' });
    expect(ids.trace_id).toMatch(/^[\da-f]{32}$/);
    expect(ids.span_id).toMatch(/^[\da-f]{16}$/);
    expect(traceIdsFromHeaders({}).trace_id).not.toBe(ids.trace_id);
  });
});

describe('fresh trace and span ids', () => {
  it('are W3C ids, different each time, across refills of the random pool', () => {
    // 4 KiB of random bytes per refill: 1,000 trace ids and 1,000 span ids take six.
    const traces = new Set<string>();
    const spans = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const trace = randomTraceId();
      const span = randomSpanId();
      expect(trace).toMatch(/^[\da-f]{32}$/);
      expect(span).toMatch(/^[\da-f]{16}$/);
      expect(trace).not.toBe('0'.repeat(32));
      traces.add(trace);
      spans.add(span);
    }
    expect(traces.size).toBe(1000);
    expect(spans.size).toBe(1000);
  });
});
