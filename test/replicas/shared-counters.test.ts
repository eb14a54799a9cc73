/**
 * The shared counters on a real PostgreSQL: `counter_take`'s sliding window (the same
 * arithmetic as the in-memory one, with the clock given), exact counting under concurrency,
 * the key cap, and `consistency: approximate` with its overshoot bound.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { CountRequest } from '../../src/evaluators/types.js';
import { createServerCounters } from '../../src/server/counters.js';
import { ApproximateCounts } from '../../src/server/approximate-counts.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { dropSchemas, pgRequired, pgUnreachable, pgUrl, skipReasonOf } from './pg.js';

const unreachable = await pgUnreachable();
const schemas: string[] = [];
const stores: PostgresStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  if (!unreachable) await dropSchemas(schemas);
});

async function open(schema?: string): Promise<PostgresStore> {
  const name = schema ?? `guard_cnt_${randomBytes(6).toString('hex')}`;
  if (schema === undefined) schemas.push(name);
  const store = await PostgresStore.open(pgUrl, { schema: name });
  stores.push(store);
  return store;
}

const request = (limit: number, extra: Partial<CountRequest> = {}): CountRequest => ({
  control_id: 1,
  counter: '1',
  key: 'ann',
  window_ms: 60_000,
  amount: 1,
  max: limit,
  always: true,
  kind: 'rate',
  consistency: 'exact',
  ...extra,
});

describe.skipIf(unreachable !== null && !pgRequired)(unreachable ? skipReasonOf(unreachable) : 'shared counters', () => {
  it('gives a burst straddling a minute edge no more than the limit, and forgets after the window', async () => {
    const store = await open();
    const shared = store.sharedCounters;
    const edge = Date.UTC(2026, 0, 1, 12, 1, 0);
    let allowed = 0;
    for (let i = 0; i < 10; i++) if (!(await shared.countShared(request(10), edge - 100, true)).over) allowed++;
    for (let i = 0; i < 10; i++) if (!(await shared.countShared(request(10), edge + 100, true)).over) allowed++;
    expect(allowed).toBe(10);
    // 20 counted: 10 allowed and 10 refused, which count too.
    expect((await shared.countShared(request(10), edge + 200, true)).used).toBe(21);
    // A window and a bucket after the last step, the key is empty again.
    const later = edge + 200 + 60_000 + 1000 + 1;
    expect(await shared.countShared(request(10), later, true)).toEqual({ used: 1, over: false });
  });

  it('adds a budget step only when it fits', async () => {
    const shared = (await open()).sharedCounters;
    const now = Date.now();
    const budget = (amount: number) => request(100, { amount, always: false, kind: 'budget', counter: '2' });
    expect(await shared.countShared(budget(60), now, true)).toEqual({ used: 60, over: false });
    expect(await shared.countShared(budget(50), now, true)).toEqual({ used: 60, over: true });
    expect(await shared.countShared(budget(40), now, true)).toEqual({ used: 100, over: false });
  });

  it('counts exactly under concurrency from two connections pools', async () => {
    const a = await open();
    const b = await open(schemas[schemas.length - 1]);
    const now = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 90 }, (_, i) => (i % 2 ? a : b).sharedCounters.countShared(request(30), now, true)),
    );
    expect(answers.filter((x) => !x.over)).toHaveLength(30);
    expect(new Set(answers.map((x) => x.used)).size).toBe(90);
  });

  it('refuses new keys once the table holds the most keys allowed', async () => {
    const store = await open();
    const counters = createServerCounters(store, { counterMaxKeys: 3 });
    try {
      for (const key of ['a', 'b', 'c', 'd']) await counters.count(request(5, { key }));
      // The cap is checked against the table when idle rows are pruned (every minute).
      await (counters as unknown as { prune(): Promise<void> }).prune();
      await expect(Promise.resolve(counters.count(request(5, { key: 'e' })))).rejects.toThrow(/too many distinct keys/);
      // Known keys go on counting.
      expect((await counters.count(request(5, { key: 'a' }))).used).toBe(2);
    } finally {
      await counters.close();
    }
  });

  it('approximate: replicas overshoot by at most what the others admit between flushes', async () => {
    const store = await open();
    const replicas = [new ApproximateCounts(store.sharedCounters, Date.now, () => true), new ApproximateCounts(store.sharedCounters, Date.now, () => true)];
    try {
      const limit = 20;
      const ask = (r: ApproximateCounts) => Promise.resolve(r.count(request(limit, { consistency: 'approximate' })));
      // Each replica's first step is exact; then they count in memory.
      await ask(replicas[0]!);
      await ask(replicas[1]!);
      await replicas[0]!.flush();
      await replicas[1]!.flush();
      let allowed = 2;
      for (let i = 0; i < 3 * limit; i++) if (!(await ask(replicas[i % 2]!)).over) allowed++;
      // Two replicas: at most (2 - 1) x limit beyond the limit within a flush interval.
      expect(allowed).toBeGreaterThanOrEqual(limit);
      expect(allowed).toBeLessThanOrEqual(2 * limit);
      await replicas[0]!.flush();
      await replicas[1]!.flush();
      await replicas[0]!.flush();
      // Once both have flushed, each sees the others' steps: nothing more gets through.
      expect((await ask(replicas[0]!)).over).toBe(true);
      expect((await ask(replicas[1]!)).over).toBe(true);
      await Promise.all(replicas.map((r) => r.flush()));
      const total = (await store.sharedCounters.counterUsage(Date.now())).find((r) => r.key === 'ann');
      expect(total?.val.reduce((s, v) => s + v, 0)).toBe(2 + 3 * limit + 2);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
  });
});
