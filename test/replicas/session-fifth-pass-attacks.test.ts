/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, fifth pass): a step alone
 * (BEGIN_STEP) meeting a session created after it began, while a prune and a batch wait.
 */
import { describe, expect, it } from 'vitest';
import { backendPid, connectedClients, lockWaits, pgRequired, pgSuiteTitle, pgUnreachable, schemaUrl, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_fifth', unreachable);
const settled = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: Error) => e.message,
  );

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('fifth-pass session attacks on PostgreSQL', unreachable), () => {
  it('a step alone that takes the count\'s row, then meets a session created since it began, deadlocks with neither a prune nor a batch', async () => {
    const store = await opener.open();
    const schema = opener.lastSchema();
    const pruner = await opener.open(schema);
    const url = schemaUrl(schema);
    const [countLocker, batcher, watcher] = await connectedClients(url, 3);
    const blockedBy = async (pid: number) =>
      (await watcher.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid])).rows[0]!.n;
    const blocked = async (pid: number) =>
      (await watcher.query<{ n: number }>('SELECT cardinality(pg_blocking_pids($1))::int AS n', [pid])).rows[0]!.n;
    try {
      // Session 'q' exists, idle since 1000: expired for a prune of sessions idle since 2000.
      await store.sharedSessions.beginSessionStep('bot', 'q', 1000, 0, 100);
      const [lockerPid, batcherPid] = await Promise.all([backendPid(countLocker), backendPid(batcher)]);
      // Another statement holds the count's row: a step of new session 'a' finds no room in
      // its batch (SKIP LOCKED) and goes alone, waiting for the count's row.
      await countLocker.query('BEGIN');
      await countLocker.query('SELECT 1 FROM session_count WHERE id = 1 FOR UPDATE');
      const step = settled(Promise.resolve(store.sharedSessions.beginSessionStep('bot', 'a', 5000, 2000, 100)));
      await expect.poll(() => blockedBy(lockerPid)).toBe(1);
      // 'a' is created and committed by another statement after the step began (unseen by it).
      await watcher.query("INSERT INTO sessions VALUES ('bot', 'a', 0, 5000, 5000, 1)");
      // A prune locks expired 'q', then waits for the count's row.
      const prune = settled(pruner.sharedSessions.pruneSessions(2000));
      await expect.poll(async () => (await watcher.query(lockWaits('%FROM session_count WHERE id = 1 FOR UPDATE%'))).rows).toEqual([{ n: 1 }]);
      // A batch of 'a' and 'q' locks 'a', then waits on 'q' (the prune holds it).
      const batch = settled(batcher.query('SELECT * FROM session_begin_steps($1, $2, $3, 5000, 2000, 100)', [['bot', 'bot'], ['a', 'q'], [1, 1]]));
      await expect.poll(() => blocked(batcherPid)).toBe(1);
      // The count's row let go: the step alone (first in line) takes it, then meets 'a'.
      await countLocker.query('COMMIT');
      expect([await step, await prune, await batch]).toEqual(['ok', 'ok', 'ok']);
      // One slot for each live session ('a', counted by the prune, and 'q' begun again by the batch).
      const counted = await watcher.query<{ n: number; rows: number }>('SELECT n::int, (SELECT count(*)::int FROM sessions) AS rows FROM session_count');
      expect(counted.rows).toEqual([{ n: 2, rows: 2 }]);
    } finally {
      await Promise.all([countLocker, batcher, watcher].map((c) => c.end()));
    }
  });

  it('a step alone whose new session another statement created meanwhile gives its slot back, counts the step on that session and reads its labels', async () => {
    const store = await opener.open();
    const shared = store.sharedSessions;
    const url = schemaUrl(opener.lastSchema());
    const [countLocker, watcher] = await connectedClients(url, 2);
    try {
      const lockerPid = await backendPid(countLocker);
      await countLocker.query('BEGIN');
      await countLocker.query('SELECT 1 FROM session_count WHERE id = 1 FOR UPDATE');
      const step = Promise.resolve(shared.beginSessionStep('bot', 'a', 5000, 2000, 100));
      await expect.poll(async () => (await watcher.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [lockerPid])).rows[0]!.n).toBe(1);
      // Another replica's step, holding the count's row, creates 'a' (its slot taken) and adds a label to it.
      await countLocker.query('UPDATE session_count SET n = n + 1 WHERE id = 1');
      await countLocker.query("INSERT INTO sessions VALUES ('bot', 'a', 0, 5000, 5000, 1)");
      await countLocker.query("INSERT INTO session_labels VALUES ('bot', 'a', 'untrusted', 0, 1, 'mark', 'post', 'fetch_url', 5000)");
      await countLocker.query('COMMIT');
      const began = (await step)!;
      expect({ epoch: began.epoch, labels: [...began.labels] }).toEqual({ epoch: 0, labels: ['untrusted'] });
      const counted = await watcher.query<{ n: number; rows: number; steps: number }>(
        'SELECT n::int, (SELECT count(*)::int FROM sessions) AS rows, (SELECT steps::int FROM sessions) AS steps FROM session_count',
      );
      expect(counted.rows).toEqual([{ n: 1, rows: 1, steps: 2 }]);
    } finally {
      await Promise.all([countLocker, watcher].map((c) => c.end()));
    }
  });
});
