/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, third pass): replica
 * clocks that differ, and a label statement racing the prune.
 */
import { describe, expect, it } from 'vitest';
import { SharedSessions } from '../../src/sessions/index.js';
import { backendPid, connectedClients, lockWaits, pgRequired, pgSuiteTitle, pgUnreachable, schemaUrl, stepBatches, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_third', unreachable);
const mark = (label: string) => [{ label, control_id: 1, control_name: `mark-${label}` }];
const stored = (l: string) => [{ label: l, control_id: 1, control_name: 'mark', stage: 'post' as const, step_name: 'run_tests', added_at: 0 }];
const DAY = 86_400_000;

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('third-pass session attacks on PostgreSQL', unreachable), () => {
  it("a replica whose clock runs a minute ahead does not prune another replica's live session and its label", async () => {
    const store = await opener.open();
    const other = await opener.open(opener.lastSchema());
    const settings = { sessionTtlMs: DAY, sessionMax: 100 };
    // A's clock is right; B's runs 60 s ahead (an NTP step missed, a VM resumed).
    let real = 1_800_000_000_000;
    const a = new SharedSessions(store.sharedSessions, settings, () => real);
    const b = new SharedSessions(other.sharedSessions, settings, () => real + 60_000);
    try {
      await a.add('bot', 'victim', (await a.begin('bot', 'victim'))!, mark('untrusted_content'), 'post', 'fetch_url');
      // The session is idle 23 h 59 m 30 s: within its TTL on any right clock.
      real += DAY - 30_000;
      await b.prune();
      expect([...(await a.begin('bot', 'victim'))!.labels]).toEqual(['untrusted_content']);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a label statement racing the prune of its session leaves no label a new session under the id inherits', async () => {
    const store = await opener.open();
    const shared = store.sharedSessions;
    // A session whose step (tests passed) is still being judged past its TTL of 1000.
    const slow = (await shared.beginSessionStep('bot', 'ci', 1000, 0, 10))!;
    expect(slow.epoch).toBe(0);
    const [locker, watcher] = await connectedClients(schemaUrl(opener.lastSchema()), 2);
    try {
      // Holds the label statement after its check that the session exists, before its insert.
      await locker.query('BEGIN');
      await locker.query(
        "INSERT INTO session_labels (agent_name, session_id, label, epoch, control_id, control_name, stage, step_name, added_at) VALUES ('bot', 'ci', 'tests_passed', 0, 1, 'x', 'post', 'x', 0)",
      );
      const adding = shared.addSessionLabels('bot', 'ci', slow, stored('tests_passed')).then(() => 'ok', (e: Error) => e.message);
      await expect.poll(async () => (await watcher.query(lockWaits('%INSERT INTO session_labels%'))).rows).toEqual([{ n: 1 }]);
      // The prune meanwhile (the session is idle past its TTL): it finishes, or waits for the label statement.
      let done = false;
      const pruned = shared.pruneSessions(2000).then(
        () => 'ok',
        (e: Error) => e.message,
      ).finally(() => (done = true));
      await expect.poll(async () => done || (await watcher.query(lockWaits('%FROM sessions WHERE last_seen <=%'))).rows[0].n === 1).toBe(true);
      await locker.query('ROLLBACK');
      expect([await pruned, await adding]).toEqual(['ok', 'ok']);
      // The id is begun again: a new session, which never passed its tests.
      const fresh = (await shared.beginSessionStep('bot', 'ci', 5000, 4000, 10))!;
      expect([...fresh.labels]).toEqual([]);
    } finally {
      await Promise.all([locker.end(), watcher.end()]);
    }
  });

  it('a step one millisecond before the TTL keeps the labels; at the TTL the session is gone for the step and the GET alike', async () => {
    const store = await opener.open();
    let now = 1_000_000;
    const ttl = 60_000;
    const sessions = new SharedSessions(store.sharedSessions, { sessionTtlMs: ttl, sessionMax: 10 }, () => now);
    try {
      await sessions.add('bot', 's', (await sessions.begin('bot', 's'))!, mark('untrusted'), 'post', 'fetch_url');
      now += ttl - 1;
      expect([...(await sessions.begin('bot', 's'))!.labels]).toEqual(['untrusted']);
      now += ttl;
      expect(await sessions.info('bot', 's')).toBeNull();
      expect([...(await sessions.begin('bot', 's'))!.labels]).toEqual([]);
    } finally {
      await sessions.close();
    }
  });

  it('a step adding labels left from its session\'s earlier epoch while the prune deletes them fails neither', async () => {
    const store = await opener.open();
    const shared = store.sharedSessions;
    const [sql, locker, watcher] = await connectedClients(schemaUrl(opener.lastSchema()), 3);
    try {
      // The session 's' had labels a and b in epoch 0; idle past its TTL, a step began epoch 1.
      await shared.beginSessionStep('bot', 's', 1000, 0, 10);
      const step = (await shared.beginSessionStep('bot', 's', 3000, 2000, 10))!;
      expect(step.epoch).toBe(1);
      // Its epoch-0 labels, with an orphan of a dead session between them in the table: a, x, b.
      const row = "INSERT INTO session_labels VALUES ('bot', $1, $2, 0, 1, 'mark', 'post', 'x', 0)";
      for (const [id, l] of [['s', 'a'], ['dead', 'x'], ['s', 'b']]) await sql.query(row, [id, l]);
      // The prune deletes the orphans in the table's order: it takes a, then waits on x.
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM session_labels WHERE session_id = 'dead' FOR UPDATE");
      const pruned = shared.pruneSessions(0).then(() => 'ok', (e: Error) => `prune: ${e.message}`);
      await expect.poll(async () => (await watcher.query(lockWaits('%session_labels l WHERE NOT EXISTS%'))).rows).toEqual([{ n: 1 }]);
      // The step adds b, then a (the order its controls matched): it takes b, then waits on a
      // (or, taking them in the prune's order, waits for nothing).
      let added = false;
      const adding = shared
        .addSessionLabels('bot', 's', step, [...stored('b'), ...stored('a')])
        .then(
          () => 'ok',
          (e: Error) => `step: ${e.message}`,
        )
        .finally(() => (added = true));
      await expect.poll(async () => added || (await watcher.query(lockWaits('%INSERT INTO session_labels%'))).rows[0].n === 1).toBe(true);
      await locker.query('COMMIT');
      expect([await pruned, await adding]).toEqual(['ok', 'ok']);
      expect([...(await shared.beginSessionStep('bot', 's', 3001, 2001, 10))!.labels].sort()).toEqual(['a', 'b']);
    } finally {
      await Promise.all([sql.end(), locker.end(), watcher.end()]);
    }
  });

  it("the prune does not delete a label a step moved to its session's live epoch while the prune ran", async () => {
    const store = await opener.open();
    const shared = store.sharedSessions;
    const [sql, locker, watcher] = await connectedClients(schemaUrl(opener.lastSchema()), 3);
    try {
      // An orphan label of a dead session, first in the table: the prune deletes it first.
      await sql.query("INSERT INTO session_labels VALUES ('bot', 'dead', 'x', 0, 1, 'mark', 'post', 'x', 0)");
      // The session 's' was marked untrusted in epoch 0; idle past its TTL, a step began epoch 1.
      await shared.addSessionLabels('bot', 's', (await shared.beginSessionStep('bot', 's', 1000, 0, 10))!, stored('untrusted'));
      const step = (await shared.beginSessionStep('bot', 's', 3000, 2000, 10))!;
      expect([step.epoch, [...step.labels]]).toEqual([1, []]);
      // The orphan held: the prune, its snapshot taken, waits on it.
      await locker.query('BEGIN');
      await locker.query("SELECT 1 FROM session_labels WHERE session_id = 'dead' FOR UPDATE");
      const pruned = shared.pruneSessions(0).then(() => 'ok', (e: Error) => `prune: ${e.message}`);
      await expect.poll(async () => (await watcher.query(lockWaits('%session_labels l WHERE NOT EXISTS%'))).rows).toEqual([{ n: 1 }]);
      // Meanwhile the step of epoch 1 reads untrusted content again: the label moves to epoch 1, answered.
      await shared.addSessionLabels('bot', 's', step, stored('untrusted'));
      await locker.query('COMMIT');
      expect(await pruned).toBe('ok');
      // The label answered decides at the session's next step.
      expect([...(await shared.beginSessionStep('bot', 's', 3001, 2001, 10))!.labels]).toEqual(['untrusted']);
    } finally {
      await Promise.all([sql.end(), locker.end(), watcher.end()]);
    }
  });

  it('two batches of steps meeting on a session one of them saw created only after it began fail neither', async () => {
    await opener.open();
    const [first, second, creator, holder, watcher] = await connectedClients(schemaUrl(opener.lastSchema()), 5);
    const [firstPid, secondPid, holderPid] = await Promise.all([backendPid(first), backendPid(second), backendPid(holder)]);
    // Each wait below is for the statement to block there, or (as it does once it waits for nothing there) to finish.
    const { batch, blockedOrDone } = stepBatches(watcher);
    try {
      // Another batch is creating session 'x' (its slot taken: it holds the count's row).
      await creator.query('BEGIN');
      await creator.query("INSERT INTO sessions VALUES ('bot', 'x', 0, 1000, 1000, 1)");
      await creator.query('UPDATE session_count SET n = n + 1 WHERE id = 1');
      // The second replica's batch of 'g' and 'x': both new to it; it waits for the count's row.
      await holder.query('BEGIN');
      await holder.query("INSERT INTO sessions VALUES ('bot', 'g', 0, 1000, 1000, 1)");
      const creatorPid = await backendPid(creator);
      const secondDone = batch(second, ['g', 'x']);
      await blockedOrDone(second, secondPid, creatorPid);
      // 'x' committed: the second takes the count's row, then waits on 'g' (held by another insert).
      await creator.query('COMMIT');
      await blockedOrDone(second, secondPid, holderPid);
      // The first replica's batch of 'f' (new) and 'x' (existing to it): it locks 'x', then waits for the count's row.
      const firstDone = batch(first, ['f', 'x']);
      await blockedOrDone(first, firstPid, secondPid);
      // 'g' given up: the second inserts 'g', then meets 'x'.
      await holder.query('ROLLBACK');
      expect([await firstDone, await secondDone]).toEqual(['ok', 'ok']);
    } finally {
      await Promise.all([first, second, creator, holder, watcher].map((c) => c.end()));
    }
  });
});
