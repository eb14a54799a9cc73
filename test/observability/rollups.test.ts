import { afterEach, describe, expect, it } from 'vitest';
import { NonMatchRollups } from '../../src/observability/non-match-rollups.js';
import { createObservability, type Observability } from '../../src/observability/observability.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { StoreError, type EventRollup } from '../../src/store/types.js';
import { addControl, denySql, evaluation, makeApp, warnEmail, type TestApp } from './app-helper.js';
import { makeConfig, makeEvent } from './fixtures.js';

const hourAgo = () => new Date(Date.now() - 3_600_000).toISOString();

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('non-match rollups through the server', () => {
  it('stores no non-match rows by default, only counts', async () => {
    t = await makeApp();
    await addControl(t.store, 'support-bot', 'block-sql', denySql);
    const warn = await addControl(t.store, 'support-bot', 'warn-email', warnEmail);
    for (let i = 0; i < 5; i++) {
      await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation('select 1') });
    }
    await t.observability.flush();
    expect((await t.store.queryEvents({ limit: 10, offset: 0 })).total).toBe(0);
    const stats = await t.store.controlStats({ since: hourAgo() });
    expect(stats.map((r) => [r.control_name, r.executions, r.non_matches])).toEqual([
      ['block-sql', 5, 5],
      ['warn-email', 5, 5],
    ]);
    // The query API returns sampled non-match rows only: none here.
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/observability/events/query',
      payload: { matched: false, control_ids: [warn] },
    });
    expect(res.json()).toMatchObject({ total: 0, events: [] });
  });

  it('with sample rate 1 stores every non-match row too, and stats do not count them twice', async () => {
    t = await makeApp({ nonMatchSampleRate: 1 });
    const deny = await addControl(t.store, 'support-bot', 'block-sql', denySql);
    const warn = await addControl(t.store, 'support-bot', 'warn-email', warnEmail);
    await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation('DROP TABLE users') });
    await t.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: evaluation('a@b.c') });
    await t.observability.flush();
    const page = await t.store.queryEvents({ limit: 10, offset: 0, matched: false });
    expect(page.events.map((e) => e.control_id).sort()).toEqual([deny, warn].sort());
    expect((await t.store.queryEvents({ limit: 10, offset: 0 })).total).toBe(4);
    const stats = await t.store.controlStats({ since: hourAgo() });
    expect(stats.map((r) => [r.control_id, r.executions, r.matches, r.non_matches])).toEqual([
      [deny, 2, 1, 1],
      [warn, 2, 1, 1],
    ]);
  });

  it('keeps errors as rows', async () => {
    t = await makeApp();
    // Run by the SDK: ingested events of server-run controls are refused.
    await addControl(t.store, 'support-bot', 'block-sql', { ...denySql, execution: 'sdk' });
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/observability/events',
      payload: { events: [makeEvent(1, { matched: false, error_message: 'timeout' }), makeEvent(2, { matched: true })] },
    });
    await t.observability.flush();
    const page = await t.store.queryEvents({ limit: 10, offset: 0 });
    expect(page.events.map((e) => e.control_execution_id).sort()).toEqual(['exec-1', 'exec-2']);
    expect((await t.store.controlStats({ since: hourAgo() }))[0]).toMatchObject({ errors: 1, matches: 1, non_matches: 0 });
  });
});

describe('the rollup key cap', () => {
  let obs: Observability | undefined;
  let store: SqliteStore | undefined;
  afterEach(async () => {
    await obs?.close();
    await store?.close();
    obs = store = undefined;
  });

  it('drops and counts non-matches of new keys past the cap, still adding to existing keys', async () => {
    store = new SqliteStore(':memory:');
    obs = createObservability({ store, config: makeConfig({ rollupMaxKeys: 2 }), processMetrics: false });
    const nonMatch = (i: number, control_id: number) => makeEvent(i, { matched: false, control_id });
    expect(obs.ingest([nonMatch(1, 1), nonMatch(3, 2), nonMatch(5, 3), nonMatch(7, 1)])).toEqual({
      received: 4,
      enqueued: 3,
      dropped: 1,
    });
    expect(obs.rollups.size).toBe(2);
    // Matches are rows: the rollup cap does not limit them.
    expect(obs.ingest([makeEvent(2, { control_id: 3 })])).toEqual({ received: 1, enqueued: 1, dropped: 0 });
    const text = await obs.metrics.registry.metrics();
    expect(text).toContain('guard_events_dropped_total{reason="buffer_full"} 1');
    await obs.flush();
    expect(obs.rollups.size).toBe(0);
    const stats = await store.controlStats({ since: hourAgo() });
    expect(stats.map((r) => [r.control_id, r.non_matches, r.matches])).toEqual([
      [1, 2, 0],
      [2, 1, 0],
      [3, 0, 1],
    ]);
    // After a flush the map is empty again, so new keys fit.
    expect(obs.ingest([nonMatch(9, 3)]).enqueued).toBe(1);
  });
});

describe('NonMatchRollups', () => {
  const key = {
    agent_name: 'a',
    control_id: 1,
    control_name: 'c',
    check_stage: 'pre',
    applies_to: 'tool',
    evaluator_name: 'regex',
  };

  it('groups by minute and key, summing count and duration', async () => {
    const written: EventRollup[][] = [];
    const rollups = new NonMatchRollups({ maxKeys: 10, write: async (r) => void written.push(r) });
    const t0 = Date.UTC(2025, 0, 1, 12, 0, 5);
    rollups.add(t0, key, 1);
    rollups.add(t0 + 30_000, key, 2);
    rollups.add(t0 + 60_000, key, 4);
    rollups.add(t0, { ...key, evaluator_name: null }, 8);
    await rollups.flush();
    expect(written).toHaveLength(1);
    const rows = written[0]!.map((r) => [r.bucket, r.evaluator_name, r.count, r.total_duration_ms]);
    expect(rows).toHaveLength(3);
    expect(rows).toEqual(
      expect.arrayContaining([
        ['2025-01-01T12:00:00.000Z', 'regex', 2, 3],
        ['2025-01-01T12:01:00.000Z', 'regex', 1, 4],
        ['2025-01-01T12:00:00.000Z', null, 1, 8],
      ]),
    );
    await rollups.flush();
    expect(written).toHaveLength(1);
  });

  it('counts steps that alternate between agents, stages, step types and minutes (some late) each under its own key', async () => {
    const written: EventRollup[][] = [];
    const rollups = new NonMatchRollups({ maxKeys: 100, write: async (r) => void written.push(r) });
    const t0 = Date.UTC(2025, 0, 1, 12, 0, 5);
    const expected = new Map<string, number>();
    const steps: Array<[number, string, string, string]> = [];
    for (let i = 0; i < 60; i++) {
      // Minutes 0, 1, 2 in turn, with every fifth step a minute late.
      const minute = i % 5 === 4 ? Math.max(0, (i % 3) - 1) : i % 3;
      steps.push([t0 + minute * 60_000, i % 2 ? 'a' : 'b', i % 4 < 2 ? 'pre' : 'post', i % 3 ? 'tool' : 'llm']);
    }
    for (const [time, agent, stage, type] of steps) {
      rollups.add(time, { ...key, agent_name: agent, check_stage: stage, applies_to: type }, 1);
      const id = `${new Date(Math.floor(time / 60_000) * 60_000).toISOString()} ${agent} ${stage} ${type}`;
      expected.set(id, (expected.get(id) ?? 0) + 1);
    }
    expect(rollups.size).toBe(expected.size);
    await rollups.flush();
    const counted = new Map(written[0]!.map((r) => [`${r.bucket} ${r.agent_name} ${r.check_stage} ${r.applies_to}`, r.count]));
    expect(counted).toEqual(expected);
  });

  it('keeps rollups for the next flush while the database is unavailable, and drops them on other failures', async () => {
    let fail: Error | null = new StoreError('unavailable', 'down');
    const written: EventRollup[] = [];
    const dropped: Array<[number, string]> = [];
    const rollups = new NonMatchRollups({
      maxKeys: 10,
      write: async (r) => {
        if (fail) throw fail;
        written.push(...r);
      },
      retryable: (e) => e instanceof StoreError && e.kind === 'unavailable',
      onDropped: (n, reason) => dropped.push([n, reason]),
    });
    rollups.add(0, key, 1);
    rollups.add(0, key, 1);
    await rollups.flush();
    expect(rollups.size).toBe(1);
    rollups.add(0, key, 1);
    fail = null;
    await rollups.flush();
    expect(written.map((r) => r.count)).toEqual([3]);
    fail = new Error('disk I/O error');
    rollups.add(0, key, 1);
    await rollups.flush();
    expect(rollups.size).toBe(0);
    expect(dropped).toEqual([[1, 'write_failed']]);
  });
});
