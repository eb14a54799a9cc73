import { afterEach, describe, expect, it } from 'vitest';
import { addControl, denySql, evaluation, failingEvaluator, makeApp, warnEmail, type TestApp } from './app-helper.js';
import { METRIC_NAMES } from './fixtures.js';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('GET /metrics', () => {
  it('serves every metric under the configured prefix, public, with route patterns as labels', async () => {
    t = await makeApp({ metricsPrefix: 'acme', apiKeyEnabled: true, apiKeys: ['regular-key-0000001'] });
    const id = await addControl(t.store, 'support-bot', 'block-sql', denySql);
    const headers = { 'x-api-key': 'regular-key-0000001' };
    await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', headers, payload: evaluation('DROP TABLE users') });
    await t.app.inject({ url: `/api/v1/observability/stats/controls/${id}`, headers });
    await t.app.inject({ url: '/api/v1/observability/stats/controls/12345', headers });
    t.observability.publishReload({ timestamp: new Date().toISOString(), result: 'failure', revision: null, errors: ['x'] });

    const res = await t.app.inject({ url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/plain');
    const text = res.body;
    for (const name of METRIC_NAMES) {
      expect(text).toContain(`# TYPE acme_${name} `);
    }
    expect(text).toContain('acme_evaluations_total{agent="support-bot",decision="deny"} 1');
    expect(text).toContain('acme_control_matches_total{control="block-sql",action="deny"} 1');
    expect(text).toContain('acme_evaluation_duration_seconds_count 1');
    expect(text).toContain('acme_controls 1');
    expect(text).toContain('acme_events_buffered 1');
    expect(text).toContain('acme_reloads_total{result="failure"} 1');
    expect(text).toContain(
      'acme_http_requests_total{method="GET",route="/api/v1/observability/stats/controls/:control_id",status="200"} 1',
    );
    expect(text).toContain(
      'acme_http_requests_total{method="GET",route="/api/v1/observability/stats/controls/:control_id",status="404"} 1',
    );
    // The raw id never becomes a label value (a figure such as a histogram sum may hold the digits).
    expect(text).not.toMatch(/controls\/12345/);
  });

  it('counts each request under its own method, route, status and labels, whatever the request before it was', async () => {
    t = await makeApp({});
    await addControl(t.store, 'support-bot', 'block-sql', denySql);
    await addControl(t.store, 'other-bot', 'block-sql-2', denySql);
    // Requests that repeat the one before and requests that differ from it in one label only.
    const sends = [
      { method: 'POST', url: '/api/v1/evaluation', payload: evaluation('DROP TABLE users') },
      { method: 'POST', url: '/api/v1/evaluation', payload: evaluation('DROP TABLE users') },
      { method: 'POST', url: '/api/v1/evaluation', payload: evaluation('SELECT 1') },
      { method: 'POST', url: '/api/v1/evaluation', payload: evaluation('DROP TABLE users', 'other-bot') },
      { method: 'GET', url: '/api/v1/agents' },
      { method: 'POST', url: '/api/v1/evaluation', payload: { nonsense: true } },
      { method: 'POST', url: '/api/v1/evaluation', payload: evaluation('DROP TABLE users') },
    ] as const;
    for (const send of sends) await t.app.inject(send);
    const text = (await t.app.inject({ url: '/metrics' })).body;
    expect(text).toContain('guard_http_requests_total{method="POST",route="/api/v1/evaluation",status="200"} 5');
    expect(text).toContain('guard_http_requests_total{method="POST",route="/api/v1/evaluation",status="422"} 1');
    expect(text).toContain('guard_http_requests_total{method="GET",route="/api/v1/agents",status="200"} 1');
    expect(text).toContain('guard_evaluations_total{agent="support-bot",decision="deny"} 3');
    expect(text).toContain('guard_evaluations_total{agent="support-bot",decision="allow"} 1');
    expect(text).toContain('guard_evaluations_total{agent="other-bot",decision="deny"} 1');
  });

  it('times and counts requests refused before their route runs (authentication)', async () => {
    t = await makeApp({ apiKeyEnabled: true, apiKeys: ['regular-key-0000001'] });
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation('x') });
    expect(refused.statusCode).toBe(401);
    const text = (await t.app.inject({ url: '/metrics' })).body;
    expect(text).toContain('guard_http_requests_total{method="POST",route="/api/v1/evaluation",status="401"} 1');
    const sum = /guard_http_request_duration_seconds_sum\{method="POST",route="\/api\/v1\/evaluation",status="401"\} ([\d.e-]+)/.exec(text);
    // Timed from arrival: a fraction of a second, not the time since the process started.
    expect(Number(sum?.[1])).toBeGreaterThan(0);
    expect(Number(sum?.[1])).toBeLessThan(1);
  });

  it('with METRICS_REQUIRE_KEY=true needs a regular or admin key (401 without), and shows the same text', async () => {
    t = await makeApp({ apiKeyEnabled: true, apiKeys: ['regular-key-0000001'], metricsRequireKey: true });
    await addControl(t.store, 'support-bot', 'block-sql', denySql);
    await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', headers: { 'x-api-key': 'regular-key-0000001' }, payload: evaluation('DROP TABLE users') });
    const anonymous = await t.app.inject({ url: '/metrics' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['content-type']).toContain('application/problem+json');
    expect(anonymous.body).not.toContain('support-bot');
    const keyed = await t.app.inject({ url: '/metrics', headers: { 'x-api-key': 'regular-key-0000001' } });
    expect(keyed.statusCode).toBe(200);
    expect(keyed.body).toContain('guard_evaluations_total{agent="support-bot",decision="deny"} 1');
    expect(t.app.registeredRoutes.find((r) => r.url === '/metrics')?.access).toBe('read');
  });

  it('bounds agent and control label values, reporting the rest as other', async () => {
    t = await makeApp({ metricsMaxLabelValues: 2 });
    for (const agent of ['a1', 'a2', 'a3', 'a4']) {
      await addControl(t.store, agent, `warn-${agent}`, warnEmail);
      await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation('mail me@x.org', agent) });
    }
    const text = (await t.app.inject({ url: '/metrics' })).body;
    expect(text).toContain('guard_evaluations_total{agent="a1",decision="allow"} 1');
    expect(text).toContain('guard_evaluations_total{agent="a2",decision="allow"} 1');
    expect(text).toContain('guard_evaluations_total{agent="other",decision="allow"} 2');
    expect(text).toContain('guard_control_matches_total{control="other",action="warn"} 2');
    expect(text).not.toContain('agent="a3"');
  });

  it('counts evaluator errors by evaluator and stores the error on the event', async () => {
    t = await makeApp({}, { evaluators: [failingEvaluator] });
    await addControl(t.store, 'support-bot', 'flaky', {
      selector: { path: 'input' },
      evaluator: { name: 'always_fails', config: { on_error: 'allow' } },
      action: { decision: 'log' },
    });
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation('hello') });
    expect(res.statusCode).toBe(200);
    const text = (await t.app.inject({ url: '/metrics' })).body;
    expect(text).toContain('guard_evaluator_errors_total{evaluator="always_fails"} 1');
    await t.observability.buffer.flush();
    const stats = (await t.app.inject({ url: '/api/v1/observability/stats?time_range=5m' })).json();
    expect(stats.totals).toMatchObject({ executions: 1, errors: 1, matches: 0, non_matches: 0 });
    const page = await t.store.queryEvents({ limit: 1, offset: 0 });
    expect(page.events[0]!.error_message).toContain('scorer unavailable');
  });
});
