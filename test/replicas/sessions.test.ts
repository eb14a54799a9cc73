/**
 * Sessions on PostgreSQL shared by two replicas (two real apps on one schema): a label
 * added through A decides on B at the very next step; concurrent steps of many sessions
 * through both replicas lose no label and no count; repeat counts across replicas; the
 * bound holds for a flood spread over both; TTL expiry with an injected clock.
 */
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SharedSessions } from '../../src/sessions/index.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { SessionCache } from '../../src/store/postgres/session-cache.js';
import type { SharedSessionStore } from '../../src/store/session-store.js';
import { createSchema, dropSchemas, pgRequired, pgSuiteTitle, pgUnreachable, schemaUrl, storeOpener, lockWaits } from './pg.js';
import { startPgApp, type PgApp } from './pg-app.js';

const unreachable = await pgUnreachable();
const schemas: string[] = [];
const apps: PgApp[] = [];
const opener = storeOpener('guard_sess', unreachable);
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
  if (!unreachable) await dropSchemas(schemas);
});

const on = (names: string[], stage: 'pre' | 'post', action: Record<string, unknown>, scope: Record<string, unknown> = {}) => ({
  scope: { step_types: ['tool'], step_names: names, stages: [stage], ...scope },
  selector: { path: 'name' },
  evaluator: { name: 'regex', config: { pattern: '.' } },
  action,
});

async function twoReplicas(env: Record<string, string> = {}, schema?: string): Promise<[PgApp, PgApp]> {
  schema ??= await createSchema(schemas);
  const a = await startPgApp(schemaUrl(schema), env);
  apps.push(a);
  const b = await startPgApp(schemaUrl(schema), env);
  apps.push(b);
  return [a, b];
}

async function link(app: PgApp, agent: string, controls: Record<string, unknown>): Promise<void> {
  await app.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: agent } });
  for (const [name, data] of Object.entries(controls)) {
    const created = await app.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name, data } });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json<{ control_id: number }>().control_id;
    expect((await app.app.inject({ method: 'POST', url: `/api/v1/agents/${agent}/controls/${id}`, payload: {} })).statusCode).toBe(200);
  }
}

interface Answer {
  decision: string;
  session?: { id: string; labels: string[] };
  matches: Array<{ control_name: string }>;
}

async function evaluate(app: PgApp, name: string, stage: 'pre' | 'post', session: string, input: unknown = {}): Promise<Answer> {
  const res = await app.app.inject({
    method: 'POST',
    url: '/api/v1/evaluation',
    payload: { agent_name: 'mail-bot', stage, session_id: session, step: { type: 'tool', name, input } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json<Answer>();
}

const EXFILTRATION = {
  'mark-untrusted': on(['fetch_url'], 'post', { decision: 'log', session_labels: ['untrusted_content'] }),
  'mark-private': on(['get_customer'], 'post', { decision: 'log', session_labels: ['private_data'] }),
  'block-exfiltration': on(['send_email'], 'pre', { decision: 'deny' }, { session_labels: ['untrusted_content', 'private_data'] }),
};

/** Waits until replica `b` has the agent's controls (replica sync). */
async function synced(b: PgApp, count: number): Promise<void> {
  await expect
    .poll(
      async () => {
        const res = await b.app.inject({ method: 'GET', url: '/api/v1/agents/mail-bot' });
        return res.statusCode === 200 && res.json<{ controls: unknown[] }>().controls.length === count;
      },
      { interval: 20, message: 'replica B to see the controls' },
    )
    .toBe(true);
}

function cacheOf(app: PgApp): SessionCache {
  if (!(app.store instanceof PostgresStore)) throw new Error('not a PostgreSQL store');
  return app.store.sharedSessions.cache;
}

/** Steps `app` takes in `session` until its cache answers one (its ping heard back); returns how many. */
async function untilCached(app: PgApp, name: string, session: string): Promise<number> {
  const cache = cacheOf(app);
  const before = cache.answered;
  let steps = 0;
  await expect
    .poll(
      async () => {
        await evaluate(app, name, 'pre', session);
        steps++;
        return cache.answered > before;
      },
      { interval: 20, timeout: 10_000, message: 'the replica to answer from its cache' },
    )
    .toBe(true);
  return steps;
}

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('sessions shared by replicas', unreachable), () => {
  it('a label added through replica A decides on replica B at the very next step', async () => {
    const [a, b] = await twoReplicas();
    await link(a, 'mail-bot', EXFILTRATION);
    await synced(b, 3);
    await evaluate(a, 'fetch_url', 'post', 's1');
    expect((await evaluate(b, 'send_email', 'pre', 's1')).decision).toBe('allow');
    await evaluate(b, 'get_customer', 'post', 's1');
    const denied = await evaluate(a, 'send_email', 'pre', 's1');
    expect(denied.decision).toBe('deny');
    expect(denied.session!.labels).toEqual(['private_data', 'untrusted_content']);
    const info = await b.app.inject({ method: 'GET', url: '/api/v1/sessions/s1?agent_name=mail-bot' });
    expect(info.json()).toMatchObject({ steps: 4, labels: [{ label: 'untrusted_content', step_name: 'fetch_url' }, { label: 'private_data', step_name: 'get_customer' }] });
  });

  it('concurrent steps of many sessions through both replicas lose no label and no step', async () => {
    const [a, b] = await twoReplicas();
    const labels = Array.from({ length: 8 }, (_, i) => `l${i}`);
    await link(a, 'mail-bot', Object.fromEntries(labels.map((l) => [`mark-${l}`, on([`tool_${l}`], 'post', { decision: 'log', session_labels: [l] })])));
    await synced(b, labels.length);
    const sessions = Array.from({ length: 6 }, (_, i) => `c${i}`);
    // Every session gets each label once, from alternating replicas, all at once.
    await Promise.all(sessions.flatMap((s) => labels.map((l, i) => evaluate(i % 2 === 0 ? a : b, `tool_${l}`, 'post', s))));
    for (const s of sessions) {
      const info = (await a.app.inject({ method: 'GET', url: `/api/v1/sessions/${s}?agent_name=mail-bot` })).json<{ steps: number; labels: Array<{ label: string }> }>();
      expect(info.steps).toBe(labels.length);
      expect(info.labels.map((l) => l.label).sort()).toEqual(labels);
    }
  });

  it('repeat counts one session across replicas exactly', async () => {
    const [a, b] = await twoReplicas();
    await link(a, 'mail-bot', {
      loop: { scope: { stages: ['pre'] }, selector: { path: 'input' }, evaluator: { name: 'repeat', config: { max: 5, window: '10m' } }, action: { decision: 'deny' } },
    });
    await synced(b, 1);
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => evaluate(i % 2 === 0 ? a : b, 'search', 'pre', 'loop', { q: 'x' })));
    expect(answers.filter((r) => r.decision === 'allow')).toHaveLength(5);
  });

  it('a flood of new session ids over both replicas stays within GUARD_SESSION_MAX; held sessions keep deciding', async () => {
    const [a, b] = await twoReplicas({ GUARD_SESSION_MAX: '4' });
    await link(a, 'mail-bot', EXFILTRATION);
    await synced(b, 3);
    await evaluate(a, 'fetch_url', 'post', 'held');
    await evaluate(b, 'get_customer', 'post', 'held');
    const flood = await Promise.all(Array.from({ length: 30 }, (_, i) => evaluate(i % 2 === 0 ? a : b, 'fetch_url', 'post', `flood-${i}`)));
    expect(flood.filter((r) => r.session !== undefined).length).toBeLessThanOrEqual(3);
    expect(flood.filter((r) => r.session === undefined).every((r) => r.decision === 'deny' && r.matches[0]!.control_name === 'session-limit')).toBe(true);
    expect((await evaluate(b, 'send_email', 'pre', 'held')).decision).toBe('deny');
  });

  it('a prune that recounts while a new session commits counts it: the bound is never recounted low', async () => {
    const store = await opener.open();
    await store.sharedSessions.beginSessionStep('bot', 'old', 1000, 0, 10);
    // A replica taking a slot for a new session, its transaction still open.
    const other = new pg.Client({ connectionString: schemaUrl(opener.lastSchema()) });
    const watcher = new pg.Client({ connectionString: schemaUrl(opener.lastSchema()) });
    await Promise.all([other.connect(), watcher.connect()]);
    try {
      await other.query('BEGIN');
      await other.query('UPDATE session_count SET n = n + 1 WHERE id = 1');
      await other.query("INSERT INTO sessions (agent_name, session_id, epoch, first_seen, last_seen, steps) VALUES ('bot', 'new', 0, 1000, 1000, 1)");
      const pruned = store.sharedSessions.pruneSessions(0);
      // The prune waits for the slot's row; the new session commits meanwhile.
      // Asked on a connection of its own: a transaction sees one snapshot of pg_stat_activity.
      await expect.poll(async () => (await watcher.query(lockWaits('%session_count%'))).rows).toEqual([{ n: 1 }]);
      await other.query('COMMIT');
      expect(await pruned).toBe(2);
      expect((await other.query('SELECT n::int FROM session_count')).rows).toEqual([{ n: 2 }]);
    } finally {
      await Promise.all([other.end(), watcher.end()]);
    }
  });

  it('steps begun together in one batch count each step, read the labels committed before, and fill the bound exactly', async () => {
    const store = await opener.open();
    const sessions = new SharedSessions(store.sharedSessions, { sessionTtlMs: 60_000, sessionMax: 6 }, () => 1_000_000);
    const first = (await sessions.begin('bot', 's-0'))!;
    await sessions.add('bot', 's-0', first, [{ label: 'seen', control_id: 1, control_name: 'mark' }], 'post', 'fetch_url');
    // In one tick: 40 steps of four held sessions, then eight new ones (room for two more).
    await Promise.all(['s-1', 's-2', 's-3'].map(async (id) => sessions.begin('bot', id)));
    const held = await Promise.all(Array.from({ length: 40 }, async (_, i) => sessions.begin('bot', `s-${i % 4}`)));
    expect(held.every((step) => step !== null)).toBe(true);
    expect(held.filter((_, i) => i % 4 === 0).every((step) => [...step!.labels].join() === 'seen')).toBe(true);
    expect(held.filter((_, i) => i % 4 !== 0).every((step) => step!.labels.size === 0)).toBe(true);
    expect((await sessions.info('bot', 's-0'))!.steps).toBe(11);
    expect((await sessions.info('bot', 's-3'))!.steps).toBe(11);
    const fresh = await Promise.all(Array.from({ length: 8 }, async (_, i) => sessions.begin('bot', `new-${i}`)));
    expect(fresh.filter((step) => step !== null)).toHaveLength(2);
    expect(await store.sharedSessions.pruneSessions(0)).toBe(6);
    await sessions.close();
  });

  it('forgets a session idle past its TTL (injected clock), and prunes it', async () => {
    const store = await opener.open();
    let now = 1_000_000;
    // The clock injected is the database's too (SharedSessions sets the replica's to it at each prune).
    const shared: SharedSessionStore = {
      beginSessionStep: (...args) => store.sharedSessions.beginSessionStep(...args),
      addSessionLabels: (...args) => store.sharedSessions.addSessionLabels(...args),
      readSession: (...args) => store.sharedSessions.readSession(...args),
      pruneSessions: (...args) => store.sharedSessions.pruneSessions(...args),
      databaseTime: async () => now,
    };
    const sessions = new SharedSessions(shared, { sessionTtlMs: 60_000, sessionMax: 10 }, () => now);
    const step = (await sessions.begin('bot', 'ttl'))!;
    await sessions.add('bot', 'ttl', step, [{ label: 'seen', control_id: 1, control_name: 'mark' }], 'post', 'fetch_url');
    now += 59_000;
    expect([...(await sessions.begin('bot', 'ttl'))!.labels]).toEqual(['seen']);
    now += 60_001;
    expect([...(await sessions.begin('bot', 'ttl'))!.labels]).toEqual([]);
    expect((await sessions.info('bot', 'ttl'))!.steps).toBe(1);
    now += 60_001;
    expect(await sessions.info('bot', 'ttl')).toBeNull();
    await sessions.prune();
    expect(await store.sharedSessions.pruneSessions(now - 60_000)).toBe(0);
    await sessions.close();
  });

  it('B answers a session from its cache, yet a label added through A decides on B at the very next step; counts stay exact', async () => {
    const [a, b] = await twoReplicas();
    await link(a, 'mail-bot', EXFILTRATION);
    await synced(b, 3);
    let steps = await untilCached(b, 'send_email', 'held');
    await evaluate(a, 'fetch_url', 'post', 'held');
    await evaluate(a, 'get_customer', 'post', 'held');
    steps += 2;
    const next = await evaluate(b, 'send_email', 'pre', 'held');
    steps++;
    expect(next.decision).toBe('deny');
    expect(next.session!.labels).toEqual(['private_data', 'untrusted_content']);
    // B caches the session again (with its labels); A's GET counts the steps B answered from it.
    steps += await untilCached(b, 'send_email', 'held');
    expect((await evaluate(b, 'send_email', 'pre', 'held')).decision).toBe('deny');
    steps++;
    const info = await a.app.inject({ method: 'GET', url: '/api/v1/sessions/held?agent_name=mail-bot' });
    expect(info.json<{ steps: number }>().steps).toBe(steps);
  });

  it('an adder answers only once a cacher that did not acknowledge has passed its time', async () => {
    const schema = await createSchema(schemas);
    const [a] = await twoReplicas({}, schema);
    await link(a, 'mail-bot', EXFILTRATION);
    const client = new pg.Client({ connectionString: schemaUrl(schema) });
    await client.connect();
    try {
      // A replica that hears nothing (its listener cut, or hung) never acknowledges.
      await client.query("INSERT INTO session_cachers VALUES ('silent', extract(epoch FROM clock_timestamp()) * 1000 + 2000)");
      await evaluate(a, 'fetch_url', 'post', 'quiet');
      const left = await client.query<{ left_ms: number }>(
        "SELECT expires_at - extract(epoch FROM clock_timestamp()) * 1000 AS left_ms FROM session_cachers WHERE replica = 'silent'",
      );
      expect(left.rows[0]!.left_ms).toBeLessThanOrEqual(0);
    } finally {
      await client.end();
    }
  });
});
