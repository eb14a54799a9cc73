/**
 * Shadow controls on a real server (real SQLite, observability on): evaluated like any
 * other, reported apart, never part of the decision; their events, stats, metrics and
 * the shadow report.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { call, json, seedAgentWithControl, sqlControl, startTestServer, step, type TestServer } from './helpers.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const CARD = '4111 1111 1111 1111';

async function shadowServer(): Promise<TestServer> {
  server = await startTestServer({ observability: true, env: { OBSERVABILITY_ENABLED: 'true' } });
  const s = server;
  // A shadow deny on the query, and an enforced one for DROP TABLE.
  await seedAgentWithControl(s.app, 'support-bot', 'block-card-numbers', sqlControl({
    mode: 'shadow',
    evaluator: { name: 'regex', config: { pattern: '\\b\\d{4} \\d{4} \\d{4} \\d{4}\\b' } },
  }));
  const enforced = json(await call(s.app, 'PUT', '/api/v1/controls', { name: 'block-drop', data: sqlControl() })).control_id;
  await call(s.app, 'POST', `/api/v1/agents/support-bot/controls/${enforced}`);
  return s;
}

describe('shadow controls on the server', () => {
  it('report what they would have done in shadow_matches and never change the decision', async () => {
    const s = await shadowServer();
    const res = json(await call(s.app, 'POST', '/api/v1/evaluation', step(`select * from cards where number = '${CARD}'`)));
    expect(res).toMatchObject({ is_safe: true, decision: 'allow', steering_context: null, matches: [] });
    expect(res.shadow_matches).toEqual([
      expect.objectContaining({ control_name: 'block-card-numbers', action: 'deny', result: expect.objectContaining({ matched: true }) }),
    ]);
    // The enforced control still decides, and the shadow one is reported beside it.
    const both = json(await call(s.app, 'POST', '/api/v1/evaluation', step(`DROP TABLE cards; -- ${CARD}`)));
    expect(both).toMatchObject({ is_safe: false, decision: 'deny' });
    expect(both.matches.map((m: { control_name: string }) => m.control_name)).toEqual(['block-drop']);
    expect(both.shadow_matches.map((m: { control_name: string }) => m.control_name)).toEqual(['block-card-numbers']);
    const clean = json(await call(s.app, 'POST', '/api/v1/evaluation', step('select 1')));
    expect(clean.shadow_matches).toEqual([]);
  });

  it('records events with mode shadow, counts would-deny in stats and the metric, and reports them masked', async () => {
    const s = await shadowServer();
    for (let i = 0; i < 3; i++) await call(s.app, 'POST', '/api/v1/evaluation', step(`select '${CARD}'`));
    for (let i = 0; i < 5; i++) await call(s.app, 'POST', '/api/v1/evaluation', step('select 1'));
    const metrics = (await call(s.app, 'GET', '/metrics')).body;
    expect(metrics).toMatch(/guard_shadow_matches_total\{control="block-card-numbers",action="deny"\} 3/);
    // A shadow match is not a match of the decision's kind.
    expect(metrics).not.toMatch(/guard_control_matches_total\{control="block-card-numbers"/);
    await s.observability!.flush();

    const events = json(await call(s.app, 'POST', '/api/v1/observability/events/query', { mode: 'shadow' })).events;
    expect(events).toHaveLength(3);
    expect(events.every((e: { mode: string; matched: boolean; action: string; set_revision: number }) => e.mode === 'shadow' && e.matched && e.action === 'deny' && e.set_revision > 0)).toBe(true);
    expect(JSON.stringify(events)).not.toContain('example');

    const stats = json(await call(s.app, 'GET', '/api/v1/observability/stats?agent_name=support-bot&time_range=1h'));
    const row = stats.controls.find((r: { control_name: string }) => r.control_name === 'block-card-numbers');
    expect(row).toMatchObject({ executions: 8, matches: 3, shadow_executions: 8, shadow_matches: 3, would_deny: 3, would_steer: 0 });
    const enforced = stats.controls.find((r: { control_name: string }) => r.control_name === 'block-drop');
    expect(enforced).toMatchObject({ executions: 8, shadow_executions: 0, would_deny: 0 });

    const report = await call(s.app, 'GET', '/api/v1/shadow-report?since=1h');
    expect(report.statusCode).toBe(200);
    expect(report.body).not.toContain(CARD);
    const body = json(report);
    expect(body.agent_name).toBeNull();
    expect(body.controls).toEqual([
      expect.objectContaining({ control_name: 'block-card-numbers', action: 'deny', evaluated: 8, matches: 3, would_deny: 3, would_steer: 0, errors: 0 }),
    ]);
    // One example per control and minute: the first match of the minute.
    expect(body.controls[0].examples).toEqual([
      expect.objectContaining({ agent_name: 'support-bot', stage: 'pre', step_type: 'tool', step_name: 'run_sql', step: { type: 'tool', name: 'run_sql', input: { query: '[MATCHED]' } } }),
    ]);
    expect(json(await call(s.app, 'GET', '/api/v1/shadow-report?agent_name=support-bot')).controls).toHaveLength(1);
  });

  it('answers the shadow report’s bad input precisely', async () => {
    const s = await shadowServer();
    const unknown = await call(s.app, 'GET', '/api/v1/shadow-report?agent_name=nobody');
    expect(unknown.statusCode).toBe(404);
    expect(json(unknown).detail).toMatch(/agent "nobody" is not registered/);
    const bad = await call(s.app, 'GET', '/api/v1/shadow-report?since=last-week');
    expect(bad.statusCode).toBe(422);
    expect(json(bad).errors[0]).toMatchObject({ field: 'since', message: expect.stringMatching(/ISO 8601 time or a duration/) });
  });

  it('refuses a mode other than enforce and shadow with 422 naming data.mode, and changes nothing', async () => {
    server = await startTestServer();
    const res = await call(server.app, 'PUT', '/api/v1/controls', { name: 'x', data: sqlControl({ mode: 'audit' as never }) });
    expect(res.statusCode).toBe(422);
    expect(json(res).errors).toEqual([{ field: 'data.mode', code: 'invalid_value', message: 'mode must be "enforce" or "shadow"' }]);
    expect(json(await call(server.app, 'GET', '/api/v1/controls')).controls).toEqual([]);
  });

  it('counts shadow events sent by SDKs (execution: sdk) like the server’s own', async () => {
    server = await startTestServer({ observability: true, env: { OBSERVABILITY_ENABLED: 'true' } });
    const id = await seedAgentWithControl(server.app, 'support-bot', 'sdk-shadow', sqlControl({ mode: 'shadow', execution: 'sdk' }));
    const base = {
      trace_id: 't'.repeat(32), span_id: 's'.repeat(16), agent_name: 'support-bot', control_id: id, control_name: 'sdk-shadow',
      check_stage: 'pre', applies_to: 'tool', action: 'deny', confidence: 1, timestamp: new Date().toISOString(),
      execution_duration_ms: 0.1, evaluator_name: 'regex', selector_path: 'input.query', error_message: null, metadata: null, mode: 'shadow', set_revision: 3,
    };
    const events = [
      { ...base, control_execution_id: 'a', matched: true },
      { ...base, control_execution_id: 'b', matched: false },
      { ...base, control_execution_id: 'c', matched: false },
    ];
    expect((await call(server.app, 'POST', '/api/v1/observability/events', { events })).statusCode).toBe(202);
    await server.observability!.flush();
    const stats = json(await call(server.app, 'GET', `/api/v1/observability/stats/controls/${id}?time_range=1h`)).stats;
    expect(stats).toMatchObject({ executions: 3, shadow_executions: 3, shadow_matches: 1, would_deny: 1 });
    // A client cannot hand the server an example to store.
    const withExample = await call(server.app, 'POST', '/api/v1/observability/events', { events: [{ ...events[0], control_execution_id: 'd', example: '{}' }] });
    expect(withExample.statusCode).toBe(422);
  });
});
