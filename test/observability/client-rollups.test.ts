// A client's rollup of non-matches (an event with `count`, sent by the SDK's NonMatchTally):
// counted as that many non-matches, with their total duration; refused on anything but a
// non-match; sampled as one non-match of its count. Through the real route, as an outside client sends it.
import { afterEach, describe, expect, it } from 'vitest';
import { addControl, denySql, makeApp, type TestApp } from './app-helper.js';
import { makeEvent } from './fixtures.js';

const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString();

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function ingest(app: TestApp['app'], events: unknown[]) {
  return app.inject({ method: 'POST', url: '/api/v1/observability/events', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ events }) });
}

describe('client rollups of non-matches (count)', () => {
  it('counts a rollup as its count of non-matches, with its total duration, and stores no row', async () => {
    t = await makeApp();
    const id = await addControl(t.store, 'support-bot', 'block-sql', { ...denySql, execution: 'sdk' });
    const answer = await ingest(t.app, [
      makeEvent(1, { control_id: id, matched: false, count: 250, execution_duration_ms: 5 }),
      makeEvent(3, { control_id: id, matched: false }),
      makeEvent(2, { control_id: id, matched: true }),
    ]);
    expect(answer.statusCode).toBe(202);
    expect(answer.json()).toEqual({ received: 3, enqueued: 3, dropped: 0 });
    await t.observability.flush();
    const [row] = await t.store.controlStats({ since: hourAgo() });
    expect(row).toMatchObject({ control_id: id, executions: 252, non_matches: 251, matches: 1 });
    expect((await t.store.queryEvents({ limit: 10, offset: 0, matched: false })).total).toBe(0);
  });

  it('refuses count on a match, an error or a selector_missing event, and a count that is not a whole number from 1; nothing of the batch is kept', async () => {
    t = await makeApp();
    const id = await addControl(t.store, 'support-bot', 'block-sql', { ...denySql, execution: 'sdk' });
    const bad: [Record<string, unknown>, string][] = [
      [{ matched: true, count: 2 }, 'events[1].count'],
      [{ matched: false, error_message: 'timeout', count: 2 }, 'events[1].count'],
      [{ matched: false, selector_missing: true, count: 2 }, 'events[1].count'],
      [{ matched: false, count: 0 }, 'events[1].count'],
      [{ matched: false, count: 2.5 }, 'events[1].count'],
      [{ matched: false, count: '2' }, 'events[1].count'],
      [{ matched: false, count: 1_000_001 }, 'events[1].count'],
    ];
    for (const [overrides, field] of bad) {
      const answer = await ingest(t.app, [makeEvent(2, { control_id: id, matched: true }), { ...makeEvent(1, { control_id: id }), ...overrides }]);
      expect(answer.statusCode, JSON.stringify(overrides)).toBe(422);
      expect(answer.json().errors.map((e: { field: string }) => e.field), JSON.stringify(overrides)).toContain(field);
    }
    await t.observability.flush();
    expect(await t.store.controlStats({ since: hourAgo() })).toEqual([]);
  });

  it('with sample rate 1, a rollup is kept as one non-match row of its mean duration, without count, and counted once', async () => {
    t = await makeApp({ nonMatchSampleRate: 1 });
    const id = await addControl(t.store, 'support-bot', 'block-sql', { ...denySql, execution: 'sdk' });
    expect((await ingest(t.app, [makeEvent(1, { control_id: id, matched: false, count: 4, execution_duration_ms: 2 })])).statusCode).toBe(202);
    await t.observability.flush();
    const page = await t.store.queryEvents({ limit: 10, offset: 0, matched: false });
    expect(page.events).toHaveLength(1);
    expect(page.events[0]!.execution_duration_ms).toBeCloseTo(0.5);
    expect(page.events[0]).not.toHaveProperty('count');
    expect((await t.store.controlStats({ since: hourAgo() }))[0]).toMatchObject({ executions: 4, non_matches: 4 });
  });
});
