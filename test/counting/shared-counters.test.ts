/**
 * The shared counters on a real PostgreSQL: `counter_take_leased`'s sliding window (the same
 * arithmetic as the in-memory one, with the clock given), exact counting under concurrency,
 * the steps of one key batched into one statement (decided in arrival order), the key cap,
 * and `consistency: approximate` with its overshoot bound.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ApproximateCounts, createServerCounters, type CountRequest } from '../../src/counting/index.js';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { SharedCounterStore } from '../../src/store/types.js';
import { withSearchPath } from '../../src/store/postgres/database.js';
import { pgRequired, pgSuiteTitle, pgUnreachable, pgUrl, pgUrlAsGiven, schemaUrl, storeOpener } from '../replicas/pg.js';

const unreachable = await pgUnreachable();
const { open, lastSchema } = storeOpener('guard_cnt', unreachable);

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


/**
 * Runs `fire` while another session holds the row of `counter`/`key` locked, and waits
 * until a statement of the store waits for that lock, runs `during`, then releases it. Steps
 * of the key fired meanwhile must queue in the process behind that one statement, so
 * they are all decided by the next one. Returns how many statements waited at most.
 */
async function whileRowLocked<T>(
  schema: string,
  counter: string,
  key: string,
  fire: () => T,
  during: () => Promise<void> = async () => undefined,
): Promise<{ fired: T; waiting: number }> {
  const holder = new pg.Client({ connectionString: schemaUrl(schema) });
  const watcher = new pg.Client({ connectionString: pgUrl });
  await holder.connect();
  await watcher.connect();
  try {
    await holder.query('BEGIN');
    const locked = await holder.query('SELECT 1 FROM counters WHERE counter = $1 AND key = $2 FOR UPDATE', [counter, key]);
    expect(locked.rowCount).toBe(1);
    const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const blocked = async () =>
      Number(
        (await watcher.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [holderPid]))
          .rows[0]!.n,
      );
    const fired = fire();
    let waiting = 0;
    await expect.poll(async () => (waiting = await blocked()), { interval: 10, message: 'a statement waiting for the lock' }).toBeGreaterThan(0);
    // Statements sent one per step would all be waiting by now (the pool has 10 connections).
    await new Promise((resolve) => setTimeout(resolve, 200));
    waiting = Math.max(waiting, await blocked());
    await during();
    await holder.query('COMMIT');
    return { fired, waiting };
  } finally {
    await holder.end().catch(() => undefined);
    await watcher.end().catch(() => undefined);
  }
}

/**
 * The store's shared counters with a gate: while held, each statement waits until
 * `release`, then is sent, or fails instead when `release(true)` is asked.
 */
function gated(store: PostgresStore): {
  shared: SharedCounterStore;
  hold(): void;
  /** Resolves once a statement waits at the gate. */
  reached(): Promise<void>;
  release(fail?: boolean): void;
  sum(key?: string): Promise<number>;
} {
  let gate: Promise<boolean> | null = null;
  let open: (fail: boolean) => void = () => undefined;
  let arrived: () => void = () => undefined;
  let reached = new Promise<void>((resolve) => (arrived = resolve));
  return {
    shared: {
      countShared: async (...args) => {
        if (gate !== null) {
          arrived();
          if (await gate) throw new Error('connection terminated');
        }
        return store.sharedCounters.countShared(...args);
      },
      counterUsage: (now) => store.sharedCounters.counterUsage(now),
      pruneCounters: (now) => store.sharedCounters.pruneCounters(now),
      counterBegan: (counter, key) => store.sharedCounters.counterBegan(counter, key),
    },
    hold: () => {
      gate = new Promise((resolve) => (open = resolve));
      reached = new Promise<void>((resolve) => (arrived = resolve));
    },
    reached: () => reached,
    release: (fail = false) => {
      gate = null;
      open(fail);
    },
    sum: async (key = 'ann') => (await store.sharedCounters.counterUsage(Date.now())).find((r) => r.key === key)?.val.reduce((a, b) => a + b, 0) ?? 0,
  };
}

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('shared counters', unreachable), () => {
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
    const b = await open(lastSchema());
    const now = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 90 }, (_, i) => (i % 2 ? a : b).sharedCounters.countShared(request(30), now, true)),
    );
    expect(answers.filter((x) => !x.over)).toHaveLength(30);
    expect(new Set(answers.map((x) => x.used)).size).toBe(90);
  });

  it('counts many concurrent steps of one key in one process exactly, each step its own sum', async () => {
    const shared = (await open()).sharedCounters;
    const now = Date.now();
    const answers = await Promise.all(Array.from({ length: 600 }, () => shared.countShared(request(150), now, true)));
    expect(answers.filter((x) => !x.over)).toHaveLength(150);
    // Every step counts (rate), one after the other: the sums are 1..600, in arrival order.
    expect(answers.map((x) => x.used)).toEqual(Array.from({ length: 600 }, (_, i) => i + 1));
  });

  it('decides the steps that queued behind a statement in one statement, in arrival order', async () => {
    const store = await open();
    const schema = lastSchema();
    const shared = store.sharedCounters;
    const now = Date.now();
    const budget = (amount: number) => request(100, { amount, always: false, kind: 'budget', counter: '2' });
    const rate = () => request(3, { counter: '3' });
    // The rows exist (locked below): one step each.
    expect(await shared.countShared(budget(10), now, true)).toEqual({ used: 10, over: false });
    expect(await shared.countShared(rate(), now, true)).toEqual({ used: 1, over: false });

    const budgets = await whileRowLocked(schema, '2', 'ann', () =>
      [10, 50, 45, 30, 5].map((amount) => shared.countShared(budget(amount), now, true)),
    );
    expect(budgets.waiting).toBe(1);
    // 10 (waited for the lock alone), then 50, 45, 30, 5 in one statement: the step that
    // would cross the budget is refused and spends nothing; later, smaller ones still fit.
    expect(await Promise.all(budgets.fired)).toEqual([
      { used: 20, over: false },
      { used: 70, over: false },
      { used: 70, over: true },
      { used: 100, over: false },
      { used: 100, over: true },
    ]);

    const rates = await whileRowLocked(schema, '3', 'ann', () => Array.from({ length: 5 }, () => shared.countShared(rate(), now, true)));
    expect(rates.waiting).toBe(1);
    // A rate step counts even when refused: the limit is crossed mid-batch.
    expect((await Promise.all(rates.fired)).map((x) => [x.used, x.over])).toEqual([
      [2, false],
      [3, false],
      [4, true],
      [5, true],
      [6, true],
    ]);
    // Another key is counted while this one waits for its lock.
    const other = await whileRowLocked(
      schema,
      '3',
      'ann',
      () => shared.countShared(rate(), now, true),
      async () => expect(await shared.countShared(request(3, { counter: '3', key: 'bob' }), now, true)).toEqual({ used: 1, over: false }),
    );
    expect(await other.fired).toEqual({ used: 7, over: true });
  });

  it('commits a count without waiting for the WAL flush, and nothing else', async () => {
    await open();
    // A session with the server's own setting (the suite's sessions commit without waiting).
    const client = new pg.Client(withSearchPath(pgUrlAsGiven(), lastSchema()));
    await client.connect();
    try {
      const setting = async () => (await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows[0]!.synchronous_commit;
      const before = await setting();
      await client.query('BEGIN');
      await client.query("SELECT * FROM counter_take_leased('1', 'ann', 1, 'rate', 60000, ARRAY[0]::float8[], ARRAY[1]::float8[], ARRAY[5]::float8[], ARRAY[true], true, ARRAY[false], ARRAY[0]::float8[], ARRAY[0]::float8[], ARRAY[0]::bigint[], ARRAY[0]::float8[], 0)");
      expect(await setting()).toBe('off');
      await client.query('COMMIT');
      // The session's setting (and so every other transaction's) is what it was.
      expect(await setting()).toBe(before);
      expect(before).not.toBe('off');
    } finally {
      await client.end();
    }
  });

  it('refuses new keys once the table holds the most keys allowed', async () => {
    const store = await open();
    const counters = createServerCounters(store, { counterMaxKeys: 3 });
    try {
      for (const key of ['a', 'b', 'c', 'd']) await counters.count(request(5, { key }));
      // The cap is checked against the table when idle rows are pruned (every minute).
      await (counters as unknown as { prune(): Promise<void> }).prune();
      await expect(Promise.resolve(counters.count(request(5, { key: 'e' })))).rejects.toThrow(/too many distinct keys/);
      // Steps of a new key that queue together are refused together, each on its own.
      const together = await Promise.allSettled(Array.from({ length: 5 }, () => Promise.resolve(counters.count(request(5, { key: 'f' })))));
      expect(together.map((r) => (r.status === 'rejected' ? String(r.reason) : 'counted'))).toEqual(
        Array(5).fill(expect.stringMatching(/too many distinct keys/)),
      );
      // Known keys go on counting.
      expect((await counters.count(request(5, { key: 'a' }))).used).toBe(2);
    } finally {
      await counters.close();
    }
  });

  it('caps keys per control: a control at its cap leaves the others taking new keys (issue #34 item 13)', async () => {
    const store = await open();
    const counters = createServerCounters(store, { counterMaxKeys: 3 });
    try {
      for (const key of ['a', 'b', 'c']) await counters.count(request(5, { key }));
      await (counters as unknown as { prune(): Promise<void> }).prune();
      await expect(Promise.resolve(counters.count(request(5, { key: 'd' })))).rejects.toThrow(/too many distinct keys/);
      await expect(Promise.resolve(counters.count(request(5, { key: 'd', consistency: 'approximate' })))).rejects.toThrow(/too many distinct keys/);
      // Another rate control and a budget control still count new keys.
      expect((await counters.count(request(5, { control_id: 2, counter: '2', key: 'd' }))).used).toBe(1);
      const budget = { control_id: 3, counter: '3', key: 'e', kind: 'budget', always: false, amount: 4, max: 10 } as const;
      expect(await counters.count(request(10, budget))).toEqual({ used: 4, over: false });
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

  describe('approximate: counts made while a flush runs', () => {
    const approximate = (limit: number) => request(limit, { consistency: 'approximate' });

    it('a flush asked for while one runs writes what was counted before it was asked', async () => {
      const g = gated(await open());
      const replica = new ApproximateCounts(g.shared, Date.now, () => true);
      try {
        await replica.count(approximate(100));
        // A flush (the timer's, say) takes the pending counts (none) and waits for the database.
        g.hold();
        const first = replica.flush();
        await g.reached();
        void replica.count(approximate(100));
        const second = replica.flush();
        g.release();
        await first;
        await second;
        expect(await g.sum()).toBe(2);
      } finally {
        await replica.close();
      }
    });

    it('keeps a step counted while a failing flush ran, and writes it when the database is back', async () => {
      const g = gated(await open());
      const replica = new ApproximateCounts(g.shared, Date.now, () => true);
      try {
        await replica.count(approximate(100));
        void replica.count(approximate(100));
        g.hold();
        const failing = replica.flush();
        await g.reached();
        void replica.count(approximate(100));
        g.release(true);
        await failing;
        await replica.flush();
        expect(await g.sum()).toBe(3);
      } finally {
        await replica.close();
      }
    });

    it('does not forget an idle key that a step was counted for while its flush ran', async () => {
      const store = await open();
      const g = gated(store);
      let now = Date.now() - 120_000;
      const replica = new ApproximateCounts(g.shared, () => now, () => true);
      try {
        await replica.count(approximate(100));
        // Two minutes later the key's window is empty: a flush reads 0 and would drop the key.
        now = Date.now();
        g.hold();
        const flushing = replica.flush();
        await g.reached();
        void replica.count(approximate(100));
        g.release();
        await flushing;
        await replica.flush();
        expect(await g.sum()).toBe(1);
      } finally {
        await replica.close();
      }
    });
  });
});
