/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, fourth pass): the
 * replica's clock, set to the database's at start and at each prune, stepped between
 * prunes or not read at start.
 */
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSessionState, SharedSessions } from '../../src/sessions/index.js';
import { PostgresStore } from '../../src/store/postgres/index.js';
import { TEST_POOL, backendPid, connectedClients, lockWaits, pgRequired, pgSuiteTitle, pgTarget, pgUnreachable, schemaUrl, stepBatches, storeOpener } from './pg.js';
import { startTcpProxy } from './tcp-proxy.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_fourth', unreachable);
const mark = (label: string) => [{ label, control_id: 1, control_name: `mark-${label}` }];
const DAY = 86_400_000;
const stored = (l: string) => [{ label: l, control_id: 1, control_name: 'mark', stage: 'post' as const, step_name: 'read', added_at: 0 }];

afterEach(() => {
  vi.restoreAllMocks();
});

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('fourth-pass session attacks on PostgreSQL', unreachable), () => {
  it("a replica whose wall clock is stepped a minute forward between prunes does not restart a live session and drop its label", async () => {
    const store = await opener.open();
    // The replica's own clock, as a server has it: the wall clock, stepped below (NTP
    // setting right a clock that ran a minute behind; the database's clock did not move).
    const wall = Date.now.bind(Date);
    let stepped = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => wall() + stepped);
    const sessions = createSessionState(store, { sessionTtlMs: 60_000, sessionMax: 100 });
    try {
      await sessions.add('bot', 'victim', (await sessions.begin('bot', 'victim'))!, mark('untrusted_content'), 'post', 'fetch_url');
      stepped = 61_000;
      // On the database's clock the session was idle a few milliseconds, well within its TTL.
      expect([...(await sessions.begin('bot', 'victim'))!.labels]).toEqual(['untrusted_content']);
    } finally {
      await sessions.close();
    }
  });

  it('a replica that could not read the database clock at start does not step on its own clock once the database is back', async () => {
    const right = await opener.open();
    const schema = opener.lastSchema();
    const proxy = await startTcpProxy(pgTarget());
    const ahead = await PostgresStore.open(schemaUrl(schema, proxy.port), { ...TEST_POOL, schema });
    const settings = { sessionTtlMs: DAY, sessionMax: 100 };
    let real = 1_800_000_000_000;
    const a = new SharedSessions(right.sharedSessions, settings, () => real);
    let b: SharedSessions | undefined;
    try {
      await a.add('bot', 'victim', (await a.begin('bot', 'victim'))!, mark('untrusted_content'), 'post', 'fetch_url');
      // The session is idle 23 h 59 m 30 s: within its TTL on any right clock.
      real += DAY - 30_000;
      // B starts while the database is away (its first clock read fails), then the database is back.
      await proxy.cut();
      b = new SharedSessions(ahead.sharedSessions, settings, () => real + 60_000);
      await b.prune();
      await proxy.restore();
      const step = await Promise.resolve(b.begin('bot', 'victim')).then((s) => [...s!.labels], (e: Error) => `failed: ${e.message}`);
      expect(step).toEqual(['untrusted_content']);
      expect([...(await a.begin('bot', 'victim'))!.labels]).toEqual(['untrusted_content']);
    } finally {
      await a.close();
      await b?.close();
      await ahead.close();
      await proxy.close();
    }
  });

  it("a label statement of a step from the session's earlier epoch, held up, does not move the live epoch's label back to the dead one", async () => {
    const store = await opener.open();
    const shared = store.sharedSessions;
    const locker = new pg.Client({ connectionString: schemaUrl(opener.lastSchema()) });
    const watcher = new pg.Client({ connectionString: schemaUrl(opener.lastSchema()) });
    await Promise.all([locker.connect(), watcher.connect()]);
    try {
      // A step of epoch 0, still being judged when its session's TTL (1000) passes.
      const old = (await shared.beginSessionStep('bot', 's', 1000, 0, 10))!;
      expect(old.epoch).toBe(0);
      // Another label statement of epoch 0 (adding 'a_note') is under way: the old step's
      // statement, its check of the epoch passed, waits on that row before its own labels.
      await locker.query('BEGIN');
      await locker.query("INSERT INTO session_labels VALUES ('bot', 's', 'a_note', 0, 1, 'mark', 'post', 'x', 0)");
      const late = shared.addSessionLabels('bot', 's', old, [...stored('a_note'), ...stored('untrusted')]).then(
        () => 'ok',
        (e: Error) => e.message,
      );
      await expect.poll(async () => (await watcher.query(lockWaits('%INSERT INTO session_labels%'))).rows).toEqual([{ n: 1 }]);
      // Meanwhile the session, idle past its TTL, starts epoch 1, whose step reads untrusted content: answered.
      const step = (await shared.beginSessionStep('bot', 's', 3000, 2000, 10))!;
      expect(step.epoch).toBe(1);
      await shared.addSessionLabels('bot', 's', step, stored('untrusted'));
      await locker.query('COMMIT');
      expect(await late).toBe('ok');
      // The label answered to epoch 1 decides at its next step.
      expect([...(await shared.beginSessionStep('bot', 's', 3001, 2001, 10))!.labels]).toEqual(['untrusted']);
    } finally {
      await Promise.all([locker.end(), watcher.end()]);
    }
  });

  it('a batch that finds the count\'s row free after waiting on a row, and meets a session created meanwhile, fails neither it nor another batch', async () => {
    await opener.open();
    const [sql, first, second, creator, holder, watcher] = await connectedClients(schemaUrl(opener.lastSchema()), 6);
    // Each wait below is for the statement to block there, or (as it does once it waits for nothing there) to finish.
    const { batch, blockedOrDone } = stepBatches(watcher);
    try {
      // Sessions 'm' and 'z' exist; another statement is creating 'a' (its slot taken).
      await sql.query('SELECT * FROM session_begin_steps($1, $2, $3, 1000, 0, 100)', [['bot', 'bot'], ['m', 'z'], [1, 1]]);
      const [firstPid, secondPid, holderPid] = await Promise.all([backendPid(first), backendPid(second), backendPid(holder)]);
      await creator.query('BEGIN');
      await creator.query('UPDATE session_count SET n = n + 1 WHERE id = 1');
      await creator.query("INSERT INTO sessions VALUES ('bot', 'a', 0, 1000, 1000, 1)");
      // A step of 'z' holds its row (a ping, a step alone).
      await holder.query('BEGIN');
      await holder.query("SELECT 1 FROM sessions WHERE session_id = 'z' FOR NO KEY UPDATE");
      // The first batch of 'a' (new to it), 'm' and 'z': it locks 'm', then waits on 'z'.
      const firstDone = batch(first, ['a', 'm', 'z']);
      await blockedOrDone(first, firstPid, holderPid);
      // 'a' is committed; the second batch of 'a' and 'm' locks 'a', then waits on 'm'.
      await creator.query('COMMIT');
      const secondDone = batch(second, ['a', 'm']);
      await blockedOrDone(second, secondPid, firstPid);
      // 'z' let go: the first finds the count's row free, takes a slot for 'a' and meets it.
      await holder.query('COMMIT');
      expect([await firstDone, await secondDone]).toEqual(['ok', 'ok']);
    } finally {
      await Promise.all([sql, first, second, creator, holder, watcher].map((c) => c.end()));
    }
  });

  it("many steps of one new session in a batch that finds the count's row taken take one slot, not one each", async () => {
    const store = await opener.open();
    const shared = store.sharedSessions;
    const url = schemaUrl(opener.lastSchema());
    const client = () => new pg.Client({ connectionString: url });
    const [rowLocker, countLocker, watcher] = [client(), client(), client()];
    await Promise.all([rowLocker, countLocker, watcher].map((c) => c.connect()));
    try {
      await shared.beginSessionStep('bot', 'e', 1000, 0, 100);
      // A batch of 'e' in flight, held on its row: the steps of 'x' that follow gather into one batch.
      await rowLocker.query('BEGIN');
      await rowLocker.query("SELECT 1 FROM sessions WHERE session_id = 'e' FOR UPDATE");
      const first = shared.beginSessionStep('bot', 'e', 1001, 0, 100);
      await expect.poll(async () => (await watcher.query(lockWaits('%session_begin_steps%'))).rows).toEqual([{ n: 1 }]);
      const steps = Array.from({ length: 8 }, () => Promise.resolve(shared.beginSessionStep('bot', 'x', 1002, 0, 100)));
      // Another statement holds the count's row when that batch runs: its new session goes step by step.
      await countLocker.query('BEGIN');
      await countLocker.query('SELECT 1 FROM session_count WHERE id = 1 FOR UPDATE');
      await rowLocker.query('COMMIT');
      await first;
      // The steps of 'x' alone, waiting for the count's row: the first, then each begun with it
      // (the wait ends when all 8 wait, or after a second when fewer came: they wait for the first).
      const waiting = async () => (await watcher.query<{ n: number }>(lockWaits('%session_begin_step(%'))).rows[0]!.n;
      await expect.poll(waiting).toBeGreaterThan(0);
      for (let i = 0; i < 50 && (await waiting()) < 8; i++) await new Promise((r) => setTimeout(r, 20));
      await countLocker.query('COMMIT');
      expect((await Promise.all(steps)).every((s) => s !== null)).toBe(true);
      const counted = await watcher.query<{ n: number; rows: number }>('SELECT n::int, (SELECT count(*)::int FROM sessions) AS rows FROM session_count');
      expect(counted.rows).toEqual([{ n: 2, rows: 2 }]);
    } finally {
      await Promise.all([rowLocker, countLocker, watcher].map((c) => c.end()));
    }
  });
});
