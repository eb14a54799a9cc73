/**
 * Ingested events cannot pass for the server's own evaluations (issue #34, low): a client
 * with a read key could send events for a control the server runs, inflating its shadow
 * report and stats. Events naming a control with `execution: server` are dropped on
 * ingest (counted); events of controls the SDK runs are what the SDK reports, and kept.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { addControl, denySql, makeApp, type TestApp } from './app-helper.js';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const eventFor = (controlId: number, name: string, i: number) => ({
  control_execution_id: `forged-${i}`, trace_id: 't', span_id: 's', agent_name: 'support-bot', control_id: controlId,
  control_name: name, check_stage: 'pre', applies_to: 'tool', action: 'deny', matched: true, confidence: 1,
  timestamp: new Date().toISOString(), execution_duration_ms: 0.1, evaluator_name: 'regex', selector_path: 'input.query',
  error_message: null, metadata: null, mode: 'shadow',
});

describe('ingest and the server’s own figures', () => {
  it('events for a server-run shadow control are dropped: the shadow report and stats stay at zero', async () => {
    t = await makeApp();
    const id = await addControl(t.store, 'support-bot', 'shadow-sql', { ...denySql, mode: 'shadow' });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/observability/events', payload: { events: Array.from({ length: 50 }, (_, i) => eventFor(id, 'shadow-sql', i)) } });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ received: 50, enqueued: 0, dropped: 50 });
    await t.observability.flush();
    const report = (await t.app.inject({ method: 'GET', url: '/api/v1/shadow-report?agent_name=support-bot' })).json();
    expect(report.controls[0]).toMatchObject({ control_id: id, evaluated: 0, would_deny: 0 });
    const stats = (await t.app.inject({ method: 'GET', url: '/api/v1/observability/stats?agent_name=support-bot&time_range=1h' })).json();
    expect(JSON.stringify(stats)).not.toContain('"would_deny":50');
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toContain('guard_events_dropped_total{reason="server_control"} 50');
  });

  it('events for an SDK-run control, or one the server does not know, are kept', async () => {
    t = await makeApp();
    const id = await addControl(t.store, 'support-bot', 'sdk-sql', { ...denySql, execution: 'sdk' });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/observability/events', payload: { events: [eventFor(id, 'sdk-sql', 1), eventFor(9999, 'gone', 2)] } });
    expect(res.json()).toEqual({ received: 2, enqueued: 2, dropped: 0 });
  });
});
