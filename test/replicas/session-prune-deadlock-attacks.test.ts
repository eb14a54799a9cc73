/**
 * Attacks on the locks of issue #37's fixes (second pass): a batch of steps locks its
 * session rows in key order (session_begin_steps, FOR UPDATE) while the prune deletes the
 * expired rows in the table's order; an attacker whose sessions' steps meet the prune
 * halfway makes them deadlock, which fails the steps (a 5xx) or the prune.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgRequired, pgSuiteTitle, pgUnreachable, schemaUrl, storeOpener, lockWaits } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_deadlock', unreachable);


describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('prune deadlock attacks on PostgreSQL', unreachable), () => {
  it('a batch of steps of expired sessions meeting the prune halfway through its delete fails neither', async () => {
    const max = 100;
    const store = await opener.open();
    const replica = await opener.open(opener.lastSchema());
    // Written b, c, a: the prune's delete meets them in that order, the batch locks a before b.
    for (const id of ['b', 'c', 'a']) expect(await store.sharedSessions.beginSessionStep('bot', id, 1000, 0, max)).not.toBeNull();
    // 'q' is live: the prune leaves it; a step of it held on its lock keeps the replica's batcher busy.
    expect(await store.sharedSessions.beginSessionStep('bot', 'q', 1900, 0, max)).not.toBeNull();
    const locker = new pg.Client({ connectionString: schemaUrl(opener.lastSchema()) });
    const queue = new pg.Client({ connectionString: schemaUrl(opener.lastSchema()) });
    const watcher = new pg.Client({ connectionString: schemaUrl(opener.lastSchema()) });
    await Promise.all([locker.connect(), queue.connect(), watcher.connect()]);
    try {
      // Hold the prune on 'c': deleting in the table's order it has 'b' and not yet 'a'
      // (locking in key order, as it does now, it has 'a' and 'b').
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM sessions WHERE session_id = 'c' FOR UPDATE");
      const pruned = store.sharedSessions.pruneSessions(1500).then(() => 'ok', (e: Error) => `prune: ${e.message}`);
      await expect.poll(async () => (await watcher.query(lockWaits('%FROM sessions WHERE last_seen <=%'))).rows).toEqual([{ n: 1 }]);
      // The attacker's steps of 'a' and 'b' wait behind a step of 'q', so they go in one batch: it locks 'a', then waits for 'b'.
      await queue.query('BEGIN');
      await queue.query("SELECT 1 FROM sessions WHERE session_id = 'q' FOR UPDATE");
      const first = replica.sharedSessions.beginSessionStep('bot', 'q', 2000, 1500, max);
      await expect.poll(async () => (await watcher.query(lockWaits('%session_begin_steps%'))).rows).toEqual([{ n: 1 }]);
      const stepped = ['a', 'b'].map(async (id) => replica.sharedSessions.beginSessionStep('bot', id, 2000, 1500, max))
        .map(async (p) => p.then((s) => (s === null ? 'refused' : 'ok'), (e: Error) => `step: ${e.message}`));
      await queue.query('COMMIT');
      expect(await first).not.toBeNull();
      await expect.poll(async () => (await watcher.query(lockWaits('%session_begin_steps%'))).rows).toEqual([{ n: 1 }]);
      await locker.query('COMMIT');
      const outcomes = [await pruned, ...(await Promise.all(stepped))];
      // Whatever happened, the count the bound is checked against is not below the sessions held.
      const [{ n, held }] = (await watcher.query('SELECT (SELECT n FROM session_count WHERE id = 1)::int AS n, (SELECT count(*) FROM sessions)::int AS held')).rows;
      expect(n).toBeGreaterThanOrEqual(held);
      // Neither is a deadlock victim: the steps (a 5xx for every step of the batch, any agent's) nor the prune.
      expect(outcomes).toEqual(['ok', 'ok', 'ok']);
    } finally {
      await Promise.all([locker.end(), queue.end(), watcher.end()]);
    }
  });
});
