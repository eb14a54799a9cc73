/**
 * Attacks on GUARD_SESSION_MAX over PostgreSQL (issue #37): a client with a valid key
 * times its steps against the prune so that sessions are kept without a slot in
 * session_count, which lets more sessions than the bound be held.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgRequired, pgSuiteTitle, pgUnreachable, schemaUrl, storeOpener, lockWaits } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_bound', unreachable);


describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('session bound attacks on PostgreSQL', unreachable), () => {
  it('a step re-beginning an expired session while the prune deletes it takes a slot: the bound is never exceeded', async () => {
    const max = 2;
    const store = await opener.open();
    // A second replica: its step does not come from the first one's cache.
    const replica = await opener.open(opener.lastSchema());
    expect(await store.sharedSessions.beginSessionStep('bot', 'a', 1000, 0, max)).not.toBeNull();
    expect(await store.sharedSessions.beginSessionStep('bot', 'b', 1000, 0, max)).not.toBeNull();
    const locker = new pg.Client({ connectionString: schemaUrl(opener.lastSchema()) });
    const watcher = new pg.Client({ connectionString: schemaUrl(opener.lastSchema()) });
    await Promise.all([locker.connect(), watcher.connect()]);
    try {
      // Hold the prune after it deleted the expired rows, before its recount.
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM session_count WHERE id = 1 FOR UPDATE');
      const pruned = store.sharedSessions.pruneSessions(1500);
      await expect.poll(async () => (await watcher.query(lockWaits('%session_count WHERE id = 1 FOR UPDATE%'))).rows).toEqual([{ n: 1 }]);
      // The attacker's step of 'a' (expired, so a new epoch) meets the prune's deleted row.
      const stepped = replica.sharedSessions.beginSessionStep('bot', 'a', 2000, 1500, max);
      await expect.poll(async () => (await watcher.query(lockWaits('%session_begin_steps%'))).rows).toEqual([{ n: 1 }]);
      await locker.query('COMMIT');
      await pruned;
      expect(await stepped).not.toBeNull();
      // Then new sessions: room for one at most.
      await replica.sharedSessions.beginSessionStep('bot', 'c', 2000, 1500, max);
      await replica.sharedSessions.beginSessionStep('bot', 'd', 2000, 1500, max);
      const held = (await watcher.query('SELECT count(*)::int AS n FROM sessions')).rows[0].n as number;
      expect(held).toBeLessThanOrEqual(max);
    } finally {
      await Promise.all([locker.end(), watcher.end()]);
    }
  });

  it('the same new session begun at once through two replicas is one session, and the bound still holds', async () => {
    const max = 3;
    const store = await opener.open();
    const replica = await opener.open(opener.lastSchema());
    for (let round = 0; round < 20; round++) {
      const id = `same-${round}`;
      const [a, b] = await Promise.all([
        store.sharedSessions.beginSessionStep('bot', id, 1000 + round, 0, max),
        replica.sharedSessions.beginSessionStep('bot', id, 1000 + round, 0, max),
      ]);
      // Both or neither: the one session either has room or has not.
      if (a !== null && b !== null) expect(a.epoch).toBe(b.epoch);
    }
    const held = await store.sharedSessions.pruneSessions(0);
    expect(held).toBeLessThanOrEqual(max);
    // After the prune's recount, no step can start a session beyond the bound.
    await Promise.all(['x', 'y', 'z'].map(async (id) => replica.sharedSessions.beginSessionStep('bot', id, 5000, 0, max)));
    expect(await store.sharedSessions.pruneSessions(0)).toBeLessThanOrEqual(max);
  });

  it('a label a step adds after its session was pruned does not block the label of the session begun again under its id', async () => {
    const store = await opener.open();
    const label = (l: string) => [{ label: l, control_id: 1, control_name: 'mark', stage: 'post' as const, step_name: 'fetch_url', added_at: 0 }];
    const shared = store.sharedSessions;
    await shared.beginSessionStep('bot', 's', 1000, 0, 10);
    // A slow step of the session's second epoch (its TTL of 1000 passed before it).
    const slow = (await shared.beginSessionStep('bot', 's', 3000, 2000, 10))!;
    expect(slow.epoch).toBe(1);
    // The session expires and is pruned while the slow step is still being judged; then it adds its label.
    await shared.pruneSessions(4000);
    await shared.addSessionLabels('bot', 's', slow, label('untrusted'));
    // The attacker's next step starts the session again (a new row) and is marked untrusted.
    const fresh = await opener.open(opener.lastSchema());
    const step = (await fresh.sharedSessions.beginSessionStep('bot', 's', 5000, 4000, 10))!;
    await fresh.sharedSessions.addSessionLabels('bot', 's', step, label('untrusted'));
    // The label answered as added decides at the very next step.
    const other = await opener.open(opener.lastSchema());
    expect([...(await other.sharedSessions.beginSessionStep('bot', 's', 5001, 4001, 10))!.labels]).toEqual(['untrusted']);
  });
});
