/**
 * Attacks on the PostgreSQL session cache (store/postgres/session-cache.ts): two stores on
 * one schema are two replicas; the session clock is frozen (injected), so a cache entry
 * never ages out and only the cache's own guarantees stand between a stale entry and a
 * step. Every race is made deterministic with a real lock held by a third connection,
 * never with a delay.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SharedSessions } from '../../src/sessions/index.js';
import type { SharedSessionStep } from '../../src/store/types.js';
import { withSearchPath } from '../../src/store/postgres/database.js';
import { PostgresStore, type PostgresStoreOptions } from '../../src/store/postgres/postgres-store.js';
import { TEST_POOL, pgRequired, pgSuiteTitle, pgUnreachable, pgUrl, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_attack', unreachable);
const NOW = 1_000_000;
const settings = { sessionTtlMs: 60_000, sessionMax: 1000 };
const mark = (label: string) => [{ label, control_id: 1, control_name: `mark-${label}` }];

/** A login role only this file's replica B uses (dropped after the file). */
const LONE_ROLE = `guard_attack_${randomBytes(4).toString('hex')}`;
if (unreachable === null) {
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  await admin.query(`CREATE ROLE ${LONE_ROLE} LOGIN SUPERUSER`);
  await admin.end();
  afterAll(async () => {
    const client = new pg.Client({ connectionString: pgUrl });
    await client.connect();
    await client.query(`DROP ROLE IF EXISTS ${LONE_ROLE}`);
    await client.end();
  });
}

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

function sessionsOf(store: PostgresStore, clock: () => number): SharedSessions {
  const sessions = new SharedSessions(store.sharedSessions, settings, clock);
  closers.push(() => sessions.close());
  return sessions;
}

/** Two replicas of one fresh schema, and a plain connection to it (the attacker's hands). */
async function replicas(
  optionsB?: PostgresStoreOptions,
  roleB?: string,
  clock = () => NOW,
): Promise<{ a: SharedSessions; b: SharedSessions; sql: pg.Client; storeB: PostgresStore }> {
  const storeA = await opener.open();
  const schema = opener.lastSchema();
  const urlB = new URL(pgUrl);
  if (roleB !== undefined) urlB.username = roleB;
  const storeB = optionsB === undefined ? await opener.open(schema) : await PostgresStore.open(urlB.toString(), { ...TEST_POOL, schema, ...optionsB });
  if (optionsB !== undefined) closers.push(() => storeB.close());
  const sql = new pg.Client(withSearchPath(pgUrl, schema));
  await sql.connect();
  closers.push(() => sql.end());
  return { a: sessionsOf(storeA, clock), b: sessionsOf(storeB, clock), sql, storeB };
}

/** Steps `sessions` takes in the session until one is answered from its cache (its ping heard back); returns how many. */
async function untilCached(sessions: SharedSessions, agent: string, id: string): Promise<number> {
  let steps = 0;
  await expect
    .poll(
      async () => {
        const step = sessions.begin(agent, id);
        steps++;
        if (!(step instanceof Promise)) return true;
        await step;
        return false;
      },
      { interval: 20, timeout: 10_000 },
    )
    .toBe(true);
  return steps;
}

/** Where `sessions` answers the session's next step from: its cache, or the database. */
async function answeredFrom(sessions: SharedSessions, agent: string, id: string): Promise<'cache' | 'database'> {
  const step = sessions.begin(agent, id);
  if (!(step instanceof Promise)) return 'cache';
  await step;
  return 'database';
}

/** How many session listeners (the cache's LISTEN connections) `role` has open. */
async function sessionListenersOf(sql: pg.Client, role: string): Promise<number> {
  const rows = await sql.query("SELECT 1 FROM pg_stat_activity WHERE usename = $1 AND application_name = 'guardctl-sessions'", [role]);
  return rows.rowCount ?? 0;
}

async function labelsOf(sessions: SharedSessions, agent: string, id: string): Promise<string[]> {
  const step = await sessions.begin(agent, id);
  return [...step!.labels].sort();
}

/**
 * Until a backend of the schema waits on a lock running `statement` (the race is then set).
 * `sql` is inside the transaction that holds the lock, and a transaction reads
 * pg_stat_activity from one snapshot: each poll clears it, or a statement that started
 * after the first poll (a loaded machine) was never seen.
 */
async function blockedOnLock(sql: pg.Client, statement: string): Promise<void> {
  await expect
    .poll(
      async () => {
        await sql.query('SELECT pg_stat_clear_snapshot()');
        return (await sql.query('SELECT 1 FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid)) AND query LIKE $1', [`%${statement}%`]))
          .rowCount;
      },
      { interval: 20, timeout: 10_000 },
    )
    .toBe(1);
}

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('attacks on the session cache', unreachable), () => {
  it('a read of B in flight when A adds a label is not cached: B denies at its next step', async () => {
    const { a, b, sql } = await replicas();
    const first = (await a.begin('bot', 's'))!;
    await untilCached(b, 'bot', 'warm');
    // B's read of `s` starts (its snapshot predates the label) and waits on the row lock.
    await sql.query('BEGIN');
    await sql.query("SELECT 1 FROM sessions WHERE agent_name = 'bot' AND session_id = 's' FOR NO KEY UPDATE");
    const inFlight = b.begin('bot', 's');
    await blockedOnLock(sql, 'session_begin_steps');
    // A answers once B has dropped `s` (B acknowledged: nothing cached yet).
    await a.add('bot', 's', first, mark('tainted'), 'post', 'fetch_url');
    await sql.query('ROLLBACK');
    // The read in flight was concurrent with the label: it must not be kept. (It reads the
    // labels in a statement begun once it holds the row, so it sees this one: migration 20.)
    expect((await inFlight)!.labels.has('tainted')).toBe(true);
    expect(await labelsOf(b, 'bot', 's')).toEqual(['tainted']);
  });

  it("a replica's own label that commits after its statement failed is not hidden by its own cache", async () => {
    // B gives up on a statement after a second (the client's query timeout); the server goes on.
    const { b, sql } = await replicas({ queryTimeoutMs: 1000 });
    const first = (await b.begin('bot', 's'))!;
    await untilCached(b, 'bot', 's');
    // An uncommitted row of the same label holds B's insert until B's client has given up.
    await sql.query('BEGIN');
    await sql.query("INSERT INTO session_labels VALUES ('bot', 's', 'tainted', 0, 9, 'other', 'post', 'x', 0)");
    const adding = b.add('bot', 's', first, mark('tainted'), 'post', 'fetch_url');
    await expect(adding).rejects.toThrow();
    // Not committed yet: B reads the session again, without the label, and caches it.
    expect(await labelsOf(b, 'bot', 's')).toEqual([]);
    await untilCached(b, 'bot', 's');
    await sql.query('ROLLBACK');
    // B's statement now commits the label (and its drop), unknown to B's client.
    await expect
      .poll(async () => (await sql.query("SELECT 1 FROM session_labels WHERE label = 'tainted' AND control_id = 1")).rowCount, { interval: 20, timeout: 10_000 })
      .toBe(1);
    await expect.poll(() => labelsOf(b, 'bot', 's'), { interval: 20, timeout: 5000 }).toEqual(['tainted']);
  });

  it("B's listener killed: B stops answering from its cache before A answers a label", async () => {
    // B's listener stays away (no reconnect, which would empty B's cache, during the test).
    // B connects as a role of its own, so that its listener is told apart from other processes' on the server.
    const { a, b, sql } = await replicas({ listenerRetryMs: 60_000 }, LONE_ROLE);
    const first = (await a.begin('bot', 's'))!;
    await untilCached(b, 'bot', 's');
    // B's listener (the latest one opened) is gone: B hears no drop, and none of its pings.
    const killed = await sql.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND application_name = 'guardctl-sessions'", [
      LONE_ROLE,
    ]);
    expect(killed.rowCount).toBe(1);
    await a.add('bot', 's', first, mark('tainted'), 'post', 'fetch_url');
    const next = b.begin('bot', 's');
    expect(next).toBeInstanceOf(Promise);
    expect([...(await next)!.labels]).toEqual(['tainted']);
  });

  it("B's listener cut and kept away: no cache until it is back, then an empty one; no label added meanwhile is missed", async () => {
    // B's listener tries again every 100 ms; while B's role may not log in, it cannot come
    // back. B's pool keeps the connections it has: opened before the cut, never closed as
    // idle, enough for its steps, pings and clock at once (a new one refused failed a step).
    // The session clock is frozen: an entry cached before the cut would answer again after
    // it, were it not emptied.
    const { a, b, sql, storeB } = await replicas({ listenerRetryMs: 100, idleTimeoutMs: 0, maxConnections: 4 }, LONE_ROLE);
    const stale = (await a.begin('bot', 'stale'))!;
    const probe = (await a.begin('bot', 'probe'))!;
    await untilCached(b, 'bot', 'stale');
    await untilCached(b, 'bot', 'probe');
    await Promise.all(Array.from({ length: 4 }, () => storeB.sharedSessions.readSession('bot', 'warm-up', 0)));
    expect((await sql.query("SELECT 1 FROM pg_stat_activity WHERE usename = $1 AND application_name = 'guardctl'", [LONE_ROLE])).rowCount).toBeGreaterThanOrEqual(4);
    await sql.query(`ALTER ROLE ${LONE_ROLE} NOLOGIN`);
    closers.push(() => sql.query(`ALTER ROLE ${LONE_ROLE} LOGIN`));
    const killed = await sql.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND application_name = 'guardctl-sessions'", [
      LONE_ROLE,
    ]);
    expect(killed.rowCount).toBe(1);

    // B stops answering from its cache (its last ping heard runs out)...
    await expect.poll(() => answeredFrom(b, 'bot', 'probe'), { interval: 50, timeout: 10_000 }).toBe('database');
    // ...and stays stopped while its pings still commit, unheard: one sent after this point.
    const [{ now }] = (await sql.query<{ now: number }>('SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now')).rows as [{ now: number }];
    await expect
      .poll(
        async () =>
          (await sql.query<{ expires_at: number }>('SELECT expires_at FROM session_cachers WHERE replica = $1', [storeB.sharedSessions.cache.replica])).rows[0]!
            .expires_at,
        { interval: 50, timeout: 10_000 },
      )
      .toBeGreaterThan(now + 3000);
    expect(await answeredFrom(b, 'bot', 'probe')).toBe('database');
    // Pings go on unheard, one a second: B keeps only those that could still let it answer (VALID_MS of them).
    await new Promise((resolve) => setTimeout(resolve, 5000));
    expect(storeB.sharedSessions.cache.pingsAwaited).toBeLessThanOrEqual(4);

    // Labels added through A while B cannot hear their drops: B reads them from the database.
    await a.add('bot', 'stale', stale, mark('tainted'), 'post', 'fetch_url');
    await a.add('bot', 'probe', probe, mark('tainted'), 'post', 'fetch_url');
    expect(await sessionListenersOf(sql, LONE_ROLE)).toBe(0);
    const during = b.begin('bot', 'probe');
    expect(during).toBeInstanceOf(Promise);
    expect([...(await during)!.labels]).toEqual(['tainted']);

    // The listener comes back: B caches again, but nothing it cached before the cut.
    await sql.query(`ALTER ROLE ${LONE_ROLE} LOGIN`);
    await expect.poll(() => sessionListenersOf(sql, LONE_ROLE), { interval: 50, timeout: 10_000 }).toBe(1);
    await untilCached(b, 'bot', 'probe');
    const after = b.begin('bot', 'stale');
    expect(after).toBeInstanceOf(Promise);
    expect([...(await after)!.labels]).toEqual(['tainted']);

    // And A's drops reach it again: a label added through A decides on B at the very next step.
    await untilCached(b, 'bot', 'stale');
    await a.add('bot', 'stale', stale, mark('again'), 'post', 'fetch_url');
    const next = b.begin('bot', 'stale');
    expect(next).toBeInstanceOf(Promise);
    expect([...(await next)!.labels].sort()).toEqual(['again', 'tainted']);
  });

  it('a cached entry answers for 5 s of the session clock at most; past the TTL the session starts empty', async () => {
    let now = NOW;
    const { a, b } = await replicas(undefined, undefined, () => now);
    const first = (await a.begin('bot', 's'))!;
    await a.add('bot', 's', first, mark('tainted'), 'post', 'fetch_url');
    await untilCached(b, 'bot', 's');
    // Read at NOW (the first step of untilCached): 5 s later B reads the database again.
    now += 5000;
    const reread = b.begin('bot', 's');
    expect(reread).toBeInstanceOf(Promise);
    expect([...(await reread)!.labels]).toEqual(['tainted']);
    now += settings.sessionTtlMs;
    expect(await labelsOf(b, 'bot', 's')).toEqual([]);
  });

  it('odd session ids and one id under two agents: the drop reaches exactly the session labelled', async () => {
    const { a, b } = await replicas();
    const ids = [`q"uo',te,s\\ \u0000x`.replace('\u0000', ''), 'x'.repeat(128), 'ünï€ode 🙂', 'same'];
    const begun = new Map<string, SharedSessionStep>();
    for (const id of ids) {
      begun.set(id, (await a.begin('bot', id))!);
      await a.begin('other-bot', id);
      await untilCached(b, 'bot', id);
      await untilCached(b, 'other-bot', id);
    }
    await Promise.all(ids.map((id) => a.add('bot', id, begun.get(id)!, mark('tainted'), 'post', 'fetch_url')));
    for (const id of ids) {
      expect(await labelsOf(b, 'bot', id)).toEqual(['tainted']);
      expect(await labelsOf(b, 'other-bot', id)).toEqual([]);
    }
  });

  it('many sessions labelled at once through both replicas: every next step sees its labels, every step is counted', async () => {
    const { a, b } = await replicas();
    const ids = Array.from({ length: 20 }, (_, i) => `m${i}`);
    const steps = new Map(ids.map((id) => [id, 1]));
    const begun = await Promise.all(ids.map(async (id) => (await a.begin('bot', id))!));
    for (const id of ids) steps.set(id, steps.get(id)! + (await untilCached(b, 'bot', id)) + (await untilCached(a, 'bot', id)));
    // Labels from both replicas and steps on both, all at once.
    await Promise.all(
      ids.flatMap((id, i) => [
        a.add('bot', id, begun[i]!, mark('from-a'), 'post', 'fetch_url'),
        b.add('bot', id, begun[i]!, mark('from-b'), 'post', 'fetch_url'),
        Promise.resolve(a.begin('bot', id)),
        Promise.resolve(b.begin('bot', id)),
      ]),
    );
    for (const id of ids) {
      expect(await labelsOf(a, 'bot', id)).toEqual(['from-a', 'from-b']);
      expect(await labelsOf(b, 'bot', id)).toEqual(['from-a', 'from-b']);
      steps.set(id, steps.get(id)! + 4);
    }
    for (const id of ids) expect((await b.info('bot', id))!.steps).toBe(steps.get(id));
  });
});
