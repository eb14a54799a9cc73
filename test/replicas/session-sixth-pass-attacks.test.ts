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

  it('a batch that takes the count\'s row, then meets a new session of it being deleted by a prune waiting for that row, deadlocks with neither', async () => {
    const store = await opener.open();
    const schema = opener.lastSchema();
    const pruner = await opener.open(schema);
    const url = schemaUrl(schema);
    const client = () => new pg.Client({ connectionString: url });
    const [creator, rowHolder, labelHolder, batcher, watcher] = [client(), client(), client(), client(), client()];
    await Promise.all([creator, rowHolder, labelHolder, batcher, watcher].map((c) => c.connect()));
    const waiting = async (pattern: string) => (await watcher.query<{ n: number }>(lockWaits(pattern))).rows[0]!.n;
    const pidOf = async (c: pg.Client) => (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const blockers = async (pid: number) => (await watcher.query<{ pids: number[] }>('SELECT pg_blocking_pids($1) AS pids', [pid])).rows[0]!.pids;
    try {
      // Live session 'q'; a label of 'z' left from an epoch no session has (for the prune to delete).
      await store.sharedSessions.beginSessionStep('bot', 'q', 5000, 2000, 100);
      await watcher.query("INSERT INTO session_labels VALUES ('bot', 'z', 'untrusted', 3, 1, 'mark', 'post', 'fetch_url', 1000)");
      // Another replica's step, holding the count's row, creates 'a' at a time read before it
      // waited (1500), not yet committed.
      await creator.query('BEGIN');
      await creator.query('UPDATE session_count SET n = n + 1 WHERE id = 1');
      await creator.query("INSERT INTO sessions VALUES ('bot', 'a', 0, 1500, 1500, 1)");
      // Another statement holds 'q' (as a batch does): a batch of 'a' and 'q', which sees no 'a', waits on it.
      const [batcherPid, holderPid] = await Promise.all([pidOf(batcher), pidOf(rowHolder)]);
      await rowHolder.query('BEGIN');
      await rowHolder.query("SELECT 1 FROM sessions WHERE agent_name = 'bot' AND session_id = 'q' FOR NO KEY UPDATE");
      let batchDone = false;
      const batch = settled(batcher.query('SELECT * FROM session_begin_steps($1, $2, $3, 5000, 2000, 100)', [['bot', 'bot'], ['a', 'q'], [1, 1]])).finally(() => {
        batchDone = true;
      });
      await expect.poll(() => waiting('%session_begin_steps(%')).toBe(1);
      await creator.query('COMMIT');
      // A label statement holds the left label; a prune deletes 'a' (idle past 2000), then waits for that label.
      await labelHolder.query('BEGIN');
      await labelHolder.query("SELECT 1 FROM session_labels WHERE session_id = 'z' FOR UPDATE");
      const prune = settled(pruner.sharedSessions.pruneSessions(2000));
      await expect.poll(() => waiting('%FROM session_labels l WHERE NOT EXISTS%')).toBe(1);
      // 'q' let go: the batch takes the count's row (free), then its insert of 'a' meets the prune's delete.
      await rowHolder.query('COMMIT');
      // Done, or waiting on another statement than the one that held 'q'.
      await expect.poll(async () => batchDone || (await blockers(batcherPid)).some((pid) => pid !== holderPid)).toBe(true);
      // The label let go: the prune goes on to the count's row, which the batch holds.
      await labelHolder.query('COMMIT');
      expect([await batch, await prune]).toEqual(['ok', 'ok']);
    } finally {
      await Promise.all([creator, rowHolder, labelHolder, batcher, watcher].map((c) => c.end()));
    }
  });
});
