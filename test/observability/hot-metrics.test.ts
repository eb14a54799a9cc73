import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CounterFamily, HistogramFamily } from '../../src/observability/hot-metrics.js';

describe('CounterFamily', () => {
  it('counts per label set through kept handles and the label-object form alike', async () => {
    const registry = new Registry();
    const counter = new CounterFamily({ name: 'x_evaluations_total', help: 'evaluations', labelNames: ['agent', 'decision'], registry });
    const deny = counter.child('bot', 'deny');
    deny.inc();
    deny.inc(2);
    counter.inc({ agent: 'bot', decision: 'deny' });
    counter.inc({ agent: 'bot', decision: 'allow' });
    deny.inc(-5); // counters never go down
    expect(counter.child('bot', 'deny')).toBe(deny);
    const text = await registry.metrics();
    expect(text).toContain('# HELP x_evaluations_total evaluations');
    expect(text).toContain('# TYPE x_evaluations_total counter');
    expect(text).toContain('x_evaluations_total{agent="bot",decision="deny"} 4');
    expect(text).toContain('x_evaluations_total{agent="bot",decision="allow"} 1');
  });

  it('shows an unlabelled counter as zero before its first use, and again after a reset', async () => {
    const registry = new Registry();
    const counter = new CounterFamily({ name: 'x_total', help: 'h', registry });
    expect(await registry.metrics()).toContain('x_total 0');
    counter.child().inc(3);
    expect(await registry.metrics()).toContain('x_total 3');
    registry.resetMetrics();
    expect(await registry.metrics()).toContain('x_total 0');
  });

  it('escapes label values as prom-client does', async () => {
    const registry = new Registry();
    const counter = new CounterFamily({ name: 'x_total', help: 'h', labelNames: ['control'], registry });
    counter.child('say "hi"\nnow').inc();
    expect(await registry.metrics()).toContain('x_total{control="say \\"hi\\"\\nnow"} 1');
  });

  it('refuses more than three labels', () => {
    expect(() => new CounterFamily({ name: 'x_total', help: 'h', labelNames: ['a', 'b', 'c', 'd'], registry: new Registry() })).toThrow(/three/);
  });
});

describe('HistogramFamily', () => {
  it('exposes cumulative buckets, +Inf, sum and count per label set', async () => {
    const registry = new Registry();
    const histogram = new HistogramFamily({ name: 'x_seconds', help: 'h', labelNames: ['route'], buckets: [0.1, 0.01, 1], registry });
    const child = histogram.child('/a');
    for (const v of [0.005, 0.01, 0.05, 0.5, 5]) child.observe(v);
    child.observe(Number.NaN); // ignored, as a non-finite value would poison the sum
    histogram.observe({ route: '/b' }, 0.2);
    const lines = (await registry.metrics()).split('\n');
    expect(lines).toContain('# TYPE x_seconds histogram');
    expect(lines).toContain('x_seconds_bucket{le="0.01",route="/a"} 2');
    expect(lines).toContain('x_seconds_bucket{le="0.1",route="/a"} 3');
    expect(lines).toContain('x_seconds_bucket{le="1",route="/a"} 4');
    expect(lines).toContain('x_seconds_bucket{le="+Inf",route="/a"} 5');
    const sum = lines.find((l) => l.startsWith('x_seconds_sum{route="/a"} '));
    expect(Number(sum?.split(' ')[1])).toBeCloseTo(5.565, 9);
    expect(lines).toContain('x_seconds_count{route="/a"} 5');
    expect(lines).toContain('x_seconds_bucket{le="0.1",route="/b"} 0');
    expect(lines).toContain('x_seconds_bucket{le="1",route="/b"} 1');
    expect(lines).toContain('x_seconds_count{route="/b"} 1');
  });

  it('puts a value equal to a bound in that bound’s bucket (le is inclusive)', async () => {
    const registry = new Registry();
    const histogram = new HistogramFamily({ name: 'x_seconds', help: 'h', buckets: [1, 2], registry });
    histogram.child().observe(1);
    const text = await registry.metrics();
    expect(text).toContain('x_seconds_bucket{le="1"} 1');
    expect(text).toContain('x_seconds_count 1');
  });
});
