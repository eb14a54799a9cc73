/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, sixth pass): a step alone
 * (session_begin_step, migration 19) that holds the count's row while its insert meets a
 * session a prune is deleting.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { lockWaits, pgRequired, pgSuiteTitle, pgUnreachable, schemaUrl, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_sixth', unreachable);
const settled = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: Error) => e.message,
  );

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('sixth-pass session attacks on PostgreSQL', unreachable), () => {
  it('a step alone that takes the count\'s row, then meets its session being deleted by a prune waiting for that row, deadlocks with neither', async () => {
    const store = await opener.open();
    const schema = opener.lastSchema();
    const pruner = await opener.open(schema);
    const url = schemaUrl(schema);
    const client = () => new pg.Client({ connectionString: url });
    const [creator, queued, watcher] = [client(), client(), client()];
    await Promise.all([creator, queued, watcher].map((c) => c.connect()));
    const waiting = async (pattern: string) => (await watcher.query<{ n: number }>(lockWaits(pattern))).rows[0]!.n;
    try {
      // Another replica's step holds the count's row while it creates session 'a'; a second
      // statement waits for that row first in line.
      await creator.query('BEGIN');
      await creator.query('SELECT 1 FROM session_count WHERE id = 1 FOR UPDATE');
      await queued.query('BEGIN');
      const queuedLock = queued.query('SELECT 1 FROM session_count WHERE id = 1 FOR UPDATE');
      await expect.poll(() => waiting('%FROM session_count WHERE id = 1 FOR UPDATE%')).toBe(1);
      // A step of 'a' finds no session, no room in its batch (SKIP LOCKED) and goes alone,
      // waiting for the count's row second in line.
      const step = settled(Promise.resolve(store.sharedSessions.beginSessionStep('bot', 'a', 5000, 2000, 100)));
      await expect.poll(() => waiting('%session_begin_step(%')).toBe(1);
      // The other step creates 'a' (its slot taken) at a time read before it waited on the
      // database (1500): idle past the prune's limit (2000) as soon as it commits.
      await creator.query('UPDATE session_count SET n = n + 1 WHERE id = 1');
      await creator.query("INSERT INTO sessions VALUES ('bot', 'a', 0, 1500, 1500, 1)");
      await creator.query('COMMIT');
      await queuedLock;
      // A prune locks and deletes 'a', then waits for the count's row behind the step.
      const prune = settled(pruner.sharedSessions.pruneSessions(2000));
      await expect.poll(() => waiting('%FROM session_count WHERE id = 1 FOR UPDATE%')).toBe(1);
      // The count's row let go: the step alone takes it, then its insert meets 'a', deleted
      // by the prune that waits for the row the step holds.
      await queued.query('COMMIT');
      expect([await step, await prune]).toEqual(['ok', 'ok']);
      // 'a' begun again as a new session, its slot counted once.
      const counted = await watcher.query<{ n: number; rows: number }>('SELECT n::int, (SELECT count(*)::int FROM sessions) AS rows FROM session_count');
      expect(counted.rows).toEqual([{ n: 1, rows: 1 }]);
    } finally {
      await Promise.all([creator, queued, watcher].map((c) => c.end()));
    }
  });
});
