/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, seventh pass).
 */
import { describe, expect, it } from 'vitest';
import { SharedSessions } from '../../src/sessions/shared-sessions.js';
import { backendPid, connectedClients, isBlockedBy, pgRequired, pgSuiteTitle, pgUnreachable, schemaUrl, storeOpener } from './pg.js';

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
});
