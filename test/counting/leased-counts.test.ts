/**
 * Exact counting with leases on a real PostgreSQL (src/counting/leased-counts.ts): a replica
 * counts most steps from room leased under the limit, gives back what it did not use, and
 * a step that only another replica's unused lease keeps out waits for it instead of being
 * refused, so replicas together still admit exactly the limit.
 */
import { describe, expect, it } from 'vitest';
import { LEASE_MS, LeasedCounts, usedAt, type CountAnswer, type CountRequest } from '../../src/counting/index.js';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { LeaseTerms, SharedCounterStore } from '../../src/store/types.js';
import { pgRequired, pgSuiteTitle, pgUnreachable, storeOpener } from '../replicas/pg.js';

const unreachable = await pgUnreachable();
const { open, lastSchema } = storeOpener('guard_lease', unreachable);

/**
 * A replica's exact counts, with the statements it sends counted. Leases last a minute
 * unless a test says otherwise, so that nothing is given back by time alone while the
 * test looks (a loaded machine may take longer than LEASE_MS between two lines). A step may
 * wait a minute too: steps queued behind another replica's lease wait for it to end, and
 * how long 600 of them take depends on the machine's load, which no test's outcome may.
 */
function replica(store: PostgresStore, leaseMs = 60_000, now = Date.now): { counts: LeasedCounts; statements: () => number } {
  let statements = 0;
  const shared: SharedCounterStore = {
    countShared: (...args) => {
      statements++;
      return store.sharedCounters.countShared(...args);
    },
    counterUsage: (now) => store.sharedCounters.counterUsage(now),
    pruneCounters: (now) => store.sharedCounters.pruneCounters(now),
    counterBegan: (counter, key) => store.sharedCounters.counterBegan(counter, key),
  };
  return { counts: new LeasedCounts(shared, now, () => true, 60_000, leaseMs), statements: () => statements };
}

const rate = (limit: number): CountRequest => ({
  control_id: 1,
  counter: '1',
  key: 'ann',
  window_ms: 60_000,
  amount: 1,
  max: limit,
  always: true,
  kind: 'rate',
  consistency: 'exact',
});

/** The key's sum in the shared table now. */
async function storedSum(store: PostgresStore, counter = '1'): Promise<number> {
  const now = Date.now();
  const row = (await store.sharedCounters.counterUsage(now)).find((r) => r.counter === counter);
  return row ? usedAt({ idx: row.idx, val: row.val }, now, row.window_ms) : 0;
}

/** One step counted: answered from a lease at once, or by the database later. */
const count = (counts: LeasedCounts, request: CountRequest): Promise<CountAnswer> => Promise.resolve(counts.count(request));
const allowed = (answers: CountAnswer[]) => answers.filter((a) => !a.over).length;
/** Three steps at once: two are counted in the database, the second leasing room that answers the third. */
const threeSteps = (counts: LeasedCounts) => Promise.all([1, 2, 3].map(() => count(counts, rate(100))));

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('leased exact counts', unreachable), () => {
  it('counts most steps of a busy key from a lease, each with its own sum, and gives back the rest', async () => {
    const store = await open();
    const { counts, statements } = replica(store);
    const answers = await Promise.all(Array.from({ length: 200 }, () => count(counts, rate(1_000_000))));
    expect(answers.every((a) => !a.over)).toBe(true);
    expect(answers.map((a) => a.used).sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    // 64 steps' room a statement: 4 statements, not 200.
    expect(statements()).toBeLessThanOrEqual(8);
    // The unused part of the last lease is counted until it is given back, then not.
    expect(await storedSum(store)).toBeGreaterThan(200);
    await counts.close();
    expect(await storedSum(store)).toBe(200);
  });

  it('gives an unused lease back by itself at its end', async () => {
    const store = await open();
    const { counts, statements } = replica(store, LEASE_MS);
    // Three steps at once: the first is counted alone; the second finds the third waiting
    // behind it, so it leases room, and the third is answered from the lease.
    const three = await Promise.all([1, 2, 3].map(() => count(counts, rate(1_000_000))));
    expect(three.map((a) => a.used).sort()).toEqual([1, 2, 3]);
    expect(statements()).toBe(2);
    // The lease's 64 were counted when it was granted, and what was not used comes back when it ends.
    await expect.poll(() => storedSum(store), { timeout: 30_000 }).toBe(3);
    const stored = (await store.sharedCounters.counterUsage(Date.now()))[0]!;
    expect(stored.val.reduce((a, b) => a + b, 0)).toBe(3);
    await counts.close();
  });

  it('counts the steps of a key seen now and then one statement each, leasing nothing', async () => {
    const store = await open();
    const { counts, statements } = replica(store);
    for (let i = 0; i < 5; i++) expect(await counts.count(rate(1_000_000))).toEqual({ used: i + 1, over: false });
    // No lease was asked for, so none is counted and none has to be given back.
    expect(statements()).toBe(5);
    expect(await storedSum(store)).toBe(5);
    await counts.close();
    expect(statements()).toBe(5);
  });

  it('admits exactly the limit across two replicas hit with 3 x limit concurrent steps', async () => {
    const a = await open();
    const b = await open(lastSchema());
    // The replicas' clock puts each one's first step (sent at once) in bucket S of the
    // minute's window (buckets of a second), and every later step 58.6 s on, in bucket
    // S + 58: the first steps are still in the window (until S + 60). Leases of 3 s go
    // into bucket S + 61, and must not push the first steps out of the window.
    // (They are short enough for a step that waits for the other replica's lease.)
    const second = Math.floor(Date.now() / 1000) * 1000;
    let clock = () => second + 500;
    const ra = replica(a, 3000, () => clock());
    const rb = replica(b, 3000, () => clock());
    const steps = Array.from({ length: 600 }, (_, i) => count((i % 2 ? ra : rb).counts, rate(200)));
    const fired = Date.now();
    clock = () => second + 58_600 + Date.now() - fired;
    const answers = await Promise.all(steps);
    expect(allowed(answers)).toBe(200);
    await ra.counts.close();
    await rb.counts.close();
    // Every step of a rate control counts, refused ones too; no lease is left in the sum.
    expect(await storedSum(a)).toBe(600);
  });

  it('keeps a step in the window when a lease went into a later bucket, and takes the lease back from its own bucket', async () => {
    const shared = (await open()).sharedCounters;
    // A minute's window: buckets of one second; this is the start of bucket k.
    const start = Date.UTC(2026, 0, 1, 12, 0, 0);
    const k = start / 1000;
    const lease = (ask: number, release: LeaseTerms['release'] = null): LeaseTerms => ({ defer: true, release, ask, leaseMs: LEASE_MS });
    expect(await shared.countShared(rate(10), start + 500, true)).toEqual({ used: 1, over: false });
    // 60 buckets later, 50 ms before the bucket's end: the lease's end is in the next bucket.
    const late = start + 60_950;
    const leased = await shared.countShared(rate(10), late, true, lease(64));
    expect(leased).toMatchObject({ used: 2, over: false, granted: 2, leaseBucket: k + 61 });
    // The first step is still in the window (bucket k of k to k + 60): 1 + 1 + 2 leased + 6.
    expect(await shared.countShared({ ...rate(10), amount: 6 }, late, true)).toEqual({ used: 10, over: false });
    expect(await shared.countShared(rate(10), late, true)).toEqual({ used: 11, over: true });
    // The unused lease comes back from bucket k + 61, where the steps after it did not go;
    // a bucket later the first step has left the window: 1 + 6 + 1.
    const back = await shared.countShared({ ...rate(10), amount: 0 }, start + 61_000, true, lease(0, { granted: 2, unused: 2, bucket: k + 61 }));
    expect(back.used).toBe(8);

    // A lease of 3 s goes three buckets ahead; steps after it go into new buckets below it.
    const bob = { ...rate(10), key: 'bob' };
    const long = (release: LeaseTerms['release'] = null): LeaseTerms => ({ defer: true, release, ask: release ? 0 : 64, leaseMs: 3000 });
    expect(await shared.countShared(bob, late, true, long())).toMatchObject({ used: 1, granted: 2, leaseBucket: k + 63 });
    expect(await shared.countShared({ ...bob, amount: 5 }, start + 61_200, true)).toEqual({ used: 8, over: false });
    expect(await shared.countShared(bob, start + 62_200, true)).toEqual({ used: 9, over: false });
    // Given back from bucket k + 63, the steps in k + 60 to k + 62 stay: 1 + 5 + 1.
    expect((await shared.countShared({ ...bob, amount: 0 }, start + 62_300, true, long({ granted: 2, unused: 2, bucket: k + 63 }))).used).toBe(7);
    // Each step leaves the window with its own bucket: at k + 121 the first has left, at
    // k + 122 the second.
    expect((await shared.countShared({ ...bob, amount: 0 }, start + 121_500, true)).used).toBe(6);
    expect((await shared.countShared({ ...bob, amount: 0 }, start + 122_500, true)).used).toBe(1);
  });

  it('counts the step of a replica whose clock is behind at the key\'s latest time', async () => {
    const shared = (await open()).sharedCounters;
    const t = Date.UTC(2026, 0, 1, 12, 0, 0) + 500;
    expect((await shared.countShared(rate(10), t, true)).used).toBe(1);
    // Five seconds behind: counted in the bucket of t, not five buckets earlier.
    expect((await shared.countShared(rate(10), t - 5000, true)).used).toBe(2);
    // 57 s after t the behind step's own bucket would have left the window; t's has not.
    expect((await shared.countShared(rate(10), t + 57_000, true)).used).toBe(3);
    // And 61 s after t both have.
    expect((await shared.countShared(rate(10), t + 61_000, true)).used).toBe(2);
  });

  it("lets a step that only another replica's unused lease keeps out wait for it, not be refused", async () => {
    const a = await open();
    const b = await open(lastSchema());
    // A's lease ends (and is given back) 300 ms after it was granted; B waits for it.
    const ra = replica(a, 300);
    // B's own leases end as soon: a step it defers waits for the last lease's end.
    const rb = replica(b, 300);
    // A counts three steps at once: the second leases a quarter of the room left (24 of
    // 98), and the third is answered from that lease.
    expect(allowed(await threeSteps(ra.counts))).toBe(3);
    expect(await storedSum(a)).toBe(26);
    // B asks for more than the rest at once. Without waiting, only 74 would get through
    // while A's lease sits unused; with it, B gets A's 23 unused when A gives them back.
    const fromB = await Promise.all(Array.from({ length: 120 }, () => count(rb.counts, rate(100))));
    expect(allowed(fromB)).toBe(97);
    await ra.counts.close();
    await rb.counts.close();
    expect(await storedSum(a)).toBe(123);
  });

  it('counts a lease that was never given back as spent once it has ended, and refuses then', async () => {
    const a = await open();
    const b = await open(lastSchema());
    const ra = replica(a, 300);
    const rb = replica(b, 300);
    expect(allowed(await threeSteps(ra.counts))).toBe(3);
    // A's database connections go away with its lease unreturned (a replica that died).
    await a.close();
    const fromB = await Promise.all(Array.from({ length: 120 }, () => count(rb.counts, rate(100))));
    // B waited for the lease's end, then counted A's 24 as spent: never more than the limit.
    expect(allowed(fromB)).toBe(74);
    await rb.counts.close();
  });
});
