/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, seventh pass).
 */
import { describe, expect, it } from 'vitest';
import { SharedSessions } from '../../src/sessions/shared-sessions.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { TEST_POOL, backendPid, connectedClients, isBlockedBy, lockWaits, pgRequired, pgUrl, pgSuiteTitle, pgUnreachable, schemaUrl, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_seventh', unreachable);
const label = (l: string) => [{ label: l, control_id: 1, control_name: 'mark', stage: 'post' as const, step_name: 'run_tests', added_at: 0 }];

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('seventh-pass session attacks on PostgreSQL', unreachable), () => {
  it('a slow step of a session\'s first epoch, pruned and begun again under its id, adds no label to the new session', async () => {
    const store = await opener.open();
    const shared = store.sharedSessions;
    // The session's first step (epoch 0) is still being judged when its TTL (1000) passes.
    const slow = (await shared.beginSessionStep('bot', 'ci', 1000, 0, 10))!;
    expect(slow.epoch).toBe(0);
    await shared.pruneSessions(2000);
    // The id is begun again on another replica: a new session, which never passed its tests.
    const other = await opener.open(opener.lastSchema());
    const fresh = (await other.sharedSessions.beginSessionStep('bot', 'ci', 3000, 2000, 10))!;
    expect([...fresh.labels]).toEqual([]);
    // The slow step of the pruned session finishes and adds its label.
    await shared.addSessionLabels('bot', 'ci', slow, label('tests_passed'));
    // The new session's next step does not carry it.
    const third = await opener.open(opener.lastSchema());
    expect([...(await third.sharedSessions.beginSessionStep('bot', 'ci', 3001, 2001, 10))!.labels]).toEqual([]);
    expect(await third.sharedSessions.readSession('bot', 'ci', 2001)).toMatchObject({ labels: [] });
  });

  it('a step whose new session another replica creates with the last slot while the step waits for the count counts on that session, not refused at the bound', async () => {
    const store = await opener.open();
    const [creator, watcher] = await connectedClients(schemaUrl(opener.lastSchema()), 2);
    // A prune just ran (at start): a step refused at the bound is not retried after another.
    const sessions = new SharedSessions(store.sharedSessions, { sessionTtlMs: 60_000, sessionMax: 2 }, () => 1_000_000);
    try {
      // One session held of two.
      expect(await sessions.begin('bot', 'other')).not.toBeNull();
      // Another replica's first step of 'a' takes the last slot and creates 'a', not yet committed.
      const creatorPid = await backendPid(creator);
      await creator.query('BEGIN');
      await creator.query("SELECT * FROM session_begin_step('bot', 'a', extract(epoch FROM clock_timestamp()) * 1000, 0, 2)");
      // A step of 'a' here in parallel: its batch sees no 'a' and skips the count's row (held),
      // then alone it waits for that row.
      let stepPid = 0;
      const step = Promise.resolve(sessions.begin('bot', 'a'));
      await expect
        .poll(async () => {
          const rows = await watcher.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE query LIKE '%FROM session_begin_step($1%' AND pid <> pg_backend_pid()");
          stepPid = rows.rows[0]?.pid ?? 0;
          return stepPid !== 0 && (await isBlockedBy(watcher, stepPid, creatorPid));
        })
        .toBe(true);
      await creator.query('COMMIT');
      // 'a' is held: its step counts on it (the bound refuses new sessions only).
      expect(await step).toMatchObject({ epoch: 0 });
      const counted = await watcher.query<{ n: number; steps: number }>("SELECT n::int, (SELECT steps::int FROM sessions WHERE session_id = 'a') AS steps FROM session_count");
      expect(counted.rows).toEqual([{ n: 2, steps: 2 }]);
    } finally {
      await sessions.close();
      await Promise.all([creator, watcher].map((c) => c.end()));
    }
  });

  it('a replica whose first clock reading waited for a pool connection does not run ahead of the database and prune a live session', async () => {
    await opener.open();
    const schema = opener.lastSchema();
    // A replica with one pool connection, taken by a step waiting on a session row held here.
    const store = await PostgresStore.open(pgUrl, { ...TEST_POOL, schema, maxConnections: 1 });
    const [holder, watcher] = await connectedClients(schemaUrl(schema), 2);
    const dbNow = async () => (await watcher.query<{ ms: number }>('SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms')).rows[0]!.ms;
    let sessions: SharedSessions | undefined;
    try {
      await watcher.query("INSERT INTO sessions VALUES ('bot', 'busy', 0, 0, extract(epoch FROM clock_timestamp()) * 1000, 1)");
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM sessions WHERE session_id = 'busy' FOR UPDATE");
      const busy = Promise.resolve(store.sharedSessions.beginSessionStep('bot', 'busy', await dbNow(), 0, 10));
      await expect.poll(async () => (await watcher.query(lockWaits('%session_begin_steps(%'))).rows).toEqual([{ n: 1 }]);
      // The replica starts: its first reading of the database's clock waits for the pool.
      sessions = new SharedSessions(store.sharedSessions, { sessionTtlMs: 10_000, sessionMax: 10 });
      await new Promise((resolve) => setTimeout(resolve, 2000));
      // Session 's', marked untrusted, idle 9.5 s of its 10 s TTL on the database's clock.
      await watcher.query("INSERT INTO sessions VALUES ('bot', 's', 0, 0, extract(epoch FROM clock_timestamp()) * 1000 - 9500, 1)");
      await watcher.query("INSERT INTO session_labels VALUES ('bot', 's', 'untrusted', 0, 1, 'mark', 'post', 'fetch_url', 0)");
      // The pool connection is free: the clock is read, then the prune at start runs.
      await holder.query('COMMIT');
      await busy;
      await sessions.prune();
      // 's' is live: its next step carries its label.
      expect([...(await sessions.begin('bot', 's'))!.labels]).toEqual(['untrusted']);
    } finally {
      await sessions?.close();
      await Promise.all([holder.end(), watcher.end()]);
      await store.close();
    }
  });

  it('a label is added on a server that prints fewer float digits (extra_float_digits = 0), whose epoch times come back rounded', async () => {
    await opener.open();
    const schema = opener.lastSchema();
    const url = new URL(pgUrl);
    url.searchParams.set('options', `${url.searchParams.get('options') ?? ''} -c extra_float_digits=0`.trim());
    const store = await PostgresStore.open(url.href, { ...TEST_POOL, schema });
    const other = await opener.open(schema);
    try {
      // A step's time has a fraction of a millisecond (the monotonic clock): 16 digits, printed as 15.
      const step = (await store.sharedSessions.beginSessionStep('bot', 's', 1_765_000_000_123.375, 0, 10))!;
      await store.sharedSessions.addSessionLabels('bot', 's', step, label('untrusted'));
      expect([...(await other.sharedSessions.beginSessionStep('bot', 's', 1_765_000_000_200, 0, 10))!.labels]).toEqual(['untrusted']);
    } finally {
      await store.close();
    }
  });
});
