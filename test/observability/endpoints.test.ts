import { afterEach, describe, expect, it } from 'vitest';
import { addControl, denySql, evaluation, makeApp, warnEmail, type TestApp } from './app-helper.js';
import { makeEvent } from './fixtures.js';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function ingest(app: TestApp['app'], events: object[]) {
  return app.inject({ method: 'POST', url: '/api/v1/observability/events', payload: { events } });
}

async function query(app: TestApp['app'], body: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: '/api/v1/observability/events/query', payload: body });
}

describe('POST /observability/events', () => {
  it('accepts a batch with 202 and stores it on flush: matches as rows, non-matches rolled up', async () => {
    t = await makeApp();
    // makeEvent(2) matches; 1 and 3 do not.
    const res = await ingest(t.app, [makeEvent(1), makeEvent(2), makeEvent(3)]);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ received: 3, enqueued: 3, dropped: 0 });
    expect((await t.store.queryEvents({ limit: 10, offset: 0 })).total).toBe(0);
    await t.observability.flush();
    const page = await t.store.queryEvents({ limit: 10, offset: 0 });
    expect(page.events.map((e) => e.control_execution_id)).toEqual(['exec-2']);
    const stats = await t.store.controlStats({ since: new Date(Date.now() - 3_600_000).toISOString() });
    expect(stats[0]).toMatchObject({ executions: 3, matches: 1, non_matches: 2, errors: 0 });
  });

  it('rejects the whole batch with 422 naming the bad field', async () => {
    t = await makeApp();
    const bad = { ...makeEvent(2), matched: 'yes' };
    const res = await ingest(t.app, [makeEvent(1), bad, makeEvent(3)]);
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const body = res.json();
    expect(body.error_code).toBe('validation_failed');
    expect(body.errors.map((e: { field: string }) => e.field)).toContain('events[1].matched');
    const unknown = await ingest(t.app, [{ ...makeEvent(1), colour: 'red' }]);
    expect(unknown.json().errors[0].field).toBe('events[0].colour');
    await t.observability.buffer.flush();
    expect(t.observability.buffer.size).toBe(0);
    expect((await t.store.queryEvents({ limit: 10, offset: 0 })).total).toBe(0);
  });

  it('refuses what the model refuses though its JSON Schema would pass it: a duration JSON reads as Infinity', async () => {
    t = await makeApp();
    // 1e400 reads as Infinity; JSON Schema's `number` lets it through, the model does not.
    const infinite = JSON.stringify({ events: [makeEvent(1)] }).replace(/"execution_duration_ms":[^,}]+/, '"execution_duration_ms":1e400');
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/observability/events', headers: { 'content-type': 'application/json' }, payload: infinite });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].field).toBe('events[0].execution_duration_ms');
    await t.observability.flush();
    expect((await t.store.queryEvents({ limit: 10, offset: 0 })).total).toBe(0);
  });

  it('takes events without error_message and metadata, storing them as null', async () => {
    t = await makeApp();
    const { error_message: _e, metadata: _m, ...bare } = makeEvent(2);
    const res = await ingest(t.app, [bare]);
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ received: 1, enqueued: 1, dropped: 0 });
    await t.observability.flush();
    const [stored] = (await t.store.queryEvents({ limit: 10, offset: 0 })).events;
    expect(stored).toMatchObject({ control_execution_id: 'exec-2', error_message: null, metadata: null });
    // Present but of the wrong type is still refused.
    const wrong = await ingest(t.app, [{ ...makeEvent(2), metadata: 'not an object' }]);
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json().errors[0].field).toBe('events[0].metadata');
  });

  it('takes 1 to 1000 events per request', async () => {
    t = await makeApp();
    expect((await ingest(t.app, [])).statusCode).toBe(422);
    const tooMany = Array.from({ length: 1001 }, (_, i) => makeEvent(i));
    expect((await ingest(t.app, tooMany)).statusCode).toBe(422);
    const justRight = Array.from({ length: 1000 }, (_, i) => makeEvent(i));
    expect((await ingest(t.app, justRight)).json()).toEqual({ received: 1000, enqueued: 1000, dropped: 0 });
  });

  it('drops and reports what does not fit in a full buffer', async () => {
    t = await makeApp({ eventBufferSize: 5 });
    const res = await ingest(t.app, Array.from({ length: 8 }, (_, i) => makeEvent(i, { matched: true })));
    expect(res.statusCode).toBe(202);
    expect(res.json()).toEqual({ received: 8, enqueued: 5, dropped: 3 });
    expect(t.observability.buffer.size).toBeLessThanOrEqual(5);
    // The head of the batch is kept, so a client can resend the tail.
    await t.observability.buffer.flush();
    const stored = await t.store.queryEvents({ limit: 10, offset: 0 });
    expect(stored.events.map((e) => e.control_execution_id).sort()).toEqual(['exec-0', 'exec-1', 'exec-2', 'exec-3', 'exec-4']);
    const metrics = await t.app.inject({ url: '/metrics' });
    expect(metrics.body).toContain('guard_events_dropped_total{reason="buffer_full"} 3');
  });
});

describe('POST /observability/events/query', () => {
  it('filters, pages and counts (non-match rows are the sampled ones)', async () => {
    t = await makeApp({ nonMatchSampleRate: 1 });
    const events = Array.from({ length: 30 }, (_, i) =>
      makeEvent(i, { agent_name: i < 20 ? 'a' : 'b', control_id: i % 3, action: i % 3 === 0 ? 'deny' : 'log' }),
    );
    await ingest(t.app, events);
    await t.observability.flush();
    const all = await query(t.app, {});
    expect(all.json()).toMatchObject({ total: 30, limit: 100, offset: 0 });
    const page = (await query(t.app, { agent_name: 'A', matched: true, limit: 3, offset: 0 })).json();
    expect(page.total).toBe(10);
    expect(page.events).toHaveLength(3);
    for (const e of page.events) expect(e).toMatchObject({ agent_name: 'a', matched: true });
    const byControl = (await query(t.app, { control_ids: [0], actions: ['deny'], stages: ['pre'] })).json();
    expect(byControl.total).toBe(10);
    const byTrace = (await query(t.app, { trace_id: 'trace-3' })).json();
    expect(byTrace.events.every((e: { trace_id: string }) => e.trace_id === 'trace-3')).toBe(true);
    expect(byTrace.total).toBe(3);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await query(t.app, { start_time: future })).json().total).toBe(0);
  });

  it('answers 422 for filters of the wrong type and pages past the maximum', async () => {
    t = await makeApp();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ matched: 'yes' }, 'matched'],
      [{ control_ids: ['1'] }, 'control_ids[0]'],
      [{ actions: ['block'] }, 'actions[0]'],
      [{ limit: 1001 }, 'limit'],
      [{ offset: -1 }, 'offset'],
      [{ start_time: 'yesterday' }, 'start_time'],
      [{ agnt_name: 'x' }, 'agnt_name'],
    ];
    for (const [body, field] of cases) {
      const res = await query(t.app, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });
});

describe('GET /observability/stats', () => {
  it('holds executions = matches + non_matches + errors, in totals and per control', async () => {
    t = await makeApp();
    const events = [
      ...Array.from({ length: 6 }, (_, i) => makeEvent(i, { control_id: 1, control_name: 'c1', matched: true, action: 'deny' })),
      ...Array.from({ length: 4 }, (_, i) => makeEvent(10 + i, { control_id: 1, control_name: 'c1', matched: false })),
      ...Array.from({ length: 3 }, (_, i) =>
        makeEvent(20 + i, { control_id: 2, control_name: 'c2', matched: i === 0, action: 'log', error_message: 'boom' }),
      ),
      ...Array.from({ length: 5 }, (_, i) => makeEvent(30 + i, { control_id: 2, control_name: 'c2', matched: true, action: 'log', agent_name: 'other' })),
      makeEvent(40, { timestamp: new Date(Date.now() - 2 * 86_400_000).toISOString() }),
    ];
    await ingest(t.app, events);
    await t.observability.flush();

    const res = await t.app.inject({ url: '/api/v1/observability/stats?agent_name=support-bot&time_range=24h' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ agent_name: 'support-bot', time_range: '24h' });
    expect(body.totals.executions).toBe(13);
    expect(body.totals.executions).toBe(body.totals.matches + body.totals.non_matches + body.totals.errors);
    expect(body.totals.errors).toBe(3);
    for (const row of body.controls) expect(row.executions).toBe(row.matches + row.non_matches + row.errors);
    const c1 = body.controls.find((r: { control_id: number }) => r.control_id === 1);
    expect(c1).toMatchObject({ executions: 10, matches: 6, non_matches: 4, errors: 0 });

    const all = (await t.app.inject({ url: '/api/v1/observability/stats?time_range=7d' })).json();
    expect(all.agent_name).toBeNull();
    expect(all.totals.executions).toBe(19);
  });

  it('answers 422 listing the allowed time ranges', async () => {
    t = await makeApp();
    const res = await t.app.inject({ url: '/api/v1/observability/stats?time_range=2h' });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].field).toBe('time_range');
    expect(res.json().errors[0].message).toContain('1m, 5m, 15m, 1h, 24h, 7d, 30d');
  });

  it('serves one control, 404 for an unknown one', async () => {
    t = await makeApp();
    // Run by the SDK: events of server-run controls are the server's own to write.
    const id = await addControl(t.store, 'support-bot', 'block-sql', { ...denySql, execution: 'sdk' });
    await ingest(t.app, [makeEvent(1, { control_id: id, matched: true }), makeEvent(2, { control_id: id, matched: false })]);
    await t.observability.flush();
    const res = await t.app.inject({ url: `/api/v1/observability/stats/controls/${id}?time_range=1h` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      control_id: id,
      control_name: 'block-sql',
      time_range: '1h',
      stats: { executions: 2, matches: 1, non_matches: 1, errors: 0 },
    });
    expect((await t.app.inject({ url: '/api/v1/observability/stats/controls/999' })).statusCode).toBe(404);
    expect((await t.app.inject({ url: `/api/v1/observability/stats/controls/${id}?time_range=forever` })).statusCode).toBe(422);
  });
});

describe('evaluations produce events', () => {
  it('stores a row per match and counts non-matches in rollups, with the trace ids of the request', async () => {
    t = await makeApp();
    const deny = await addControl(t.store, 'support-bot', 'block-sql', denySql);
    const warn = await addControl(t.store, 'support-bot', 'warn-email', warnEmail);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/evaluation',
      headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
      payload: evaluation('DROP TABLE users'),
    });
    expect(res.json().decision).toBe('deny');
    await t.observability.flush();
    const page = await t.store.queryEvents({ limit: 10, offset: 0 });
    // warn-email did not match: no row, only a count.
    expect(page.total).toBe(1);
    const stats = await t.store.controlStats({ since: new Date(Date.now() - 3_600_000).toISOString() });
    expect(stats.map((r) => [r.control_id, r.matches, r.non_matches])).toEqual([
      [deny, 1, 0],
      [warn, 0, 1],
    ]);
    const e = page.events.find((x) => x.control_id === deny)!;
    expect(e).toMatchObject({
      trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
      span_id: '00f067aa0ba902b7',
      agent_name: 'support-bot',
      control_name: 'block-sql',
      check_stage: 'pre',
      applies_to: 'tool',
      action: 'deny',
      matched: true,
      evaluator_name: 'regex',
      selector_path: 'input.query',
      error_message: null,
    });
  });

  it('when disabled, stores nothing but still counts evaluations', async () => {
    t = await makeApp({ observabilityEnabled: false });
    await addControl(t.store, 'support-bot', 'block-sql', denySql);
    await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation('DROP TABLE x') });
    const ack = await ingest(t.app, [makeEvent(1, { control_id: 999 })]);
    expect(ack.json()).toEqual({ received: 1, enqueued: 0, dropped: 1 });
    await t.observability.close();
    expect((await t.store.queryEvents({ limit: 10, offset: 0 })).total).toBe(0);
    const text = (await t.app.inject({ url: '/metrics' })).body;
    expect(text).toContain('guard_evaluations_total{agent="support-bot",decision="deny"} 1');
    expect(text).toContain('guard_events_dropped_total{reason="disabled"} 1');
  });
});

describe('flushing', () => {
  it('flushes on the interval', async () => {
    t = await makeApp({ flushIntervalSeconds: 0.05 });
    t.observability.start();
    await ingest(t.app, [makeEvent(1), makeEvent(2)]);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    // Both the match row and the non-match rollup are written by the timer.
    await expect.poll(async () => (await t!.store.controlStats({ since }))[0]?.executions ?? 0).toBe(2);
    expect((await t.store.queryEvents({ limit: 10, offset: 0 })).total).toBe(1);
  });

  it('flushes when half full without waiting for the interval', async () => {
    t = await makeApp({ eventBufferSize: 100 });
    t.observability.start();
    await ingest(t.app, Array.from({ length: 49 }, (_, i) => makeEvent(i, { matched: true })));
    await new Promise((r) => setImmediate(r));
    expect(t.observability.buffer.size).toBe(49);
    await ingest(t.app, [makeEvent(49, { matched: true })]);
    await expect.poll(async () => (await t!.store.queryEvents({ limit: 1, offset: 0 })).total).toBe(50);
  });

  it('flushes rows and rollups on close', async () => {
    t = await makeApp();
    // One match (a row) and two non-matches (one rollup).
    await ingest(t.app, [makeEvent(1), makeEvent(2), makeEvent(3)]);
    await t.app.close();
    await t.observability.close();
    expect((await t.store.queryEvents({ limit: 10, offset: 0 })).total).toBe(1);
    const stats = await t.store.controlStats({ since: new Date(Date.now() - 3_600_000).toISOString() });
    expect(stats[0]).toMatchObject({ matches: 1, non_matches: 2 });
    const metrics = await t.observability.metrics.registry.metrics();
    expect(metrics).toContain('guard_events_written_total 3');
  });
});

describe('retention', () => {
  it('prunes events and rollups older than the retention', async () => {
    t = await makeApp({ eventRetentionDays: 1 });
    const old = new Date(Date.now() - 2 * 86_400_000).toISOString();
    await ingest(t.app, [makeEvent(1, { timestamp: old, matched: true }), makeEvent(3, { timestamp: old }), makeEvent(2), makeEvent(5)]);
    await t.observability.flush();
    // The old row and the old rollup row.
    expect(await t.observability.prune()).toBe(2);
    const page = await t.store.queryEvents({ limit: 10, offset: 0 });
    expect(page.events.map((e) => e.control_execution_id)).toEqual(['exec-2']);
    const stats = await t.store.controlStats({ since: new Date(Date.now() - 7 * 86_400_000).toISOString() });
    expect(stats[0]).toMatchObject({ matches: 1, non_matches: 1 });
  });
});
