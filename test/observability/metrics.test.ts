import { describe, expect, it } from 'vitest';
import { createMetrics, sanitisePrefix } from '../../src/observability/metrics.js';
import { METRIC_NAMES } from './fixtures.js';



describe('createMetrics', () => {
  it('registers every metric under the prefix on its own registry, with process metrics', async () => {
    const metrics = createMetrics({ prefix: 'acme', maxLabelValues: 10, countControls: async () => 7, bufferedEvents: () => 3 });
    const text = await metrics.registry.metrics();
    for (const name of METRIC_NAMES) expect(text).toContain(`# TYPE acme_${name} `);
    expect(text).toContain('acme_process_cpu_user_seconds_total');
    expect(text).toContain('acme_controls 7');
    expect(text).toContain('acme_events_buffered 3');
    expect(text).not.toMatch(/^# TYPE guard_/m);
  });

  it('follows the naming rules promtool checks: counters end in _total, nothing else does', async () => {
    const metrics = createMetrics({ prefix: 'guard', maxLabelValues: 10, countControls: async () => 1, bufferedEvents: () => 0 });
    const types = [...(await metrics.registry.metrics()).matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => ({ name: m[1]!, type: m[2]! }));
    expect(types.length).toBeGreaterThan(20);
    for (const { name, type } of types) {
      if (type === 'counter') expect(name, `${name} is a counter`).toMatch(/_total$/);
      else expect(name, `${name} is a ${type}`).not.toMatch(/_total$/);
    }
    // The per-type gauges stay: their sum is the total the _total gauges would have said.
    expect(types.map((t) => t.name)).toEqual(expect.arrayContaining(['guard_nodejs_active_handles', 'guard_nodejs_active_requests']));
  });

  it('keeps two apps apart: each has its own registry', async () => {
    const a = createMetrics({ prefix: 'guard', maxLabelValues: 10, processMetrics: false });
    const b = createMetrics({ prefix: 'guard', maxLabelValues: 10, processMetrics: false });
    a.reloads.inc({ result: 'success' });
    expect(await a.registry.metrics()).toContain('guard_reloads_total{result="success"} 1');
    expect(await b.registry.metrics()).not.toContain('guard_reloads_total{result="success"}');
  });

  it('caches the controls count between scrapes', async () => {
    let calls = 0;
    const metrics = createMetrics({
      prefix: 'guard',
      maxLabelValues: 10,
      processMetrics: false,
      countControls: async () => ++calls,
      controlsCacheMs: 60_000,
    });
    await metrics.registry.metrics();
    const text = await metrics.registry.metrics();
    expect(calls).toBe(1);
    expect(text).toContain('guard_controls 1');
  });

  it('turns an unusable prefix into a valid metric name', () => {
    expect(sanitisePrefix('my-app')).toBe('my_app');
    expect(sanitisePrefix('9lives')).toBe('_9lives');
    expect(sanitisePrefix('')).toBe('guard');
  });
});
