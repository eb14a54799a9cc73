/**
 * Rate, budget and repeat counters time their windows by one clock, whatever the replica's
 * own says: on PostgreSQL the database server's, read at start (src/clock.ts); for one
 * server the monotonic clock. A replica whose clock runs ahead, or whose wall clock is
 * stepped, must not start a new window early for everyone, and one that cannot read the
 * database's clock at start must not count on its own.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createServerCounters, type CountAnswer, type CountRequest, type ServerCounters } from '../../src/counting/index.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/types.js';
import { startTestServer } from '../support/server.js';
import { TEST_POOL, pgRequired, pgSuiteTitle, pgTarget, pgUnreachable, schemaUrl, storeOpener } from './pg.js';
import { startTcpProxy } from './tcp-proxy.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_cclock', unreachable);

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** `max: 5` per 30 s window, one key. */
const rate = (consistency: 'exact' | 'approximate'): CountRequest => ({
  control_id: 1,
  counter: '1',
  key: 'ann',
  window_ms: 30_000,
  amount: 1,
  max: 5,
  always: true,
  kind: 'rate',
  consistency,
});

function countersOf(store: Parameters<typeof createServerCounters>[0], now?: () => number): ServerCounters {
  const counters = createServerCounters(store, { counterMaxKeys: 100 }, now ? { now } : {});
  closers.push(() => counters.close());
  return counters;
}

/** How many of `n` steps were allowed; a step that failed counts as not allowed, and is returned. */
async function allowedOf(counters: ServerCounters, request: CountRequest, n: number): Promise<{ allowed: number; errors: string[] }> {
  let allowed = 0;
  const errors: string[] = [];
  for (let i = 0; i < n; i++) {
    const answer = await Promise.resolve(counters.count(request)).then(
      (a: CountAnswer) => a,
      (e: Error) => e,
    );
    if (answer instanceof Error) errors.push(answer.message);
    else if (!answer.over) allowed++;
  }
  return { allowed, errors };
}

/** The wall clock as it was before a test stepped it. */
const wallClock = Date.now.bind(Date);

/** Makes Date.now a wall clock the test steps by the milliseconds it returns to. */
function steppedWallClock(): { step(ms: number): void } {
  let stepped = 0;
  vi.spyOn(Date, 'now').mockImplementation(() => wallClock() + stepped);
  return { step: (ms) => (stepped += ms) };
}

describe('one server', () => {
  it('a wall clock stepped forward does not open a new window', async () => {
    const wall = steppedWallClock();
    const store = new SqliteStore(':memory:');
    closers.push(async () => store.close());
    const counters = countersOf(store);
    expect((await allowedOf(counters, rate('exact'), 5)).allowed).toBe(5);
    // NTP (or an operator) steps the wall clock an hour forward: the window is still the same.
    wall.step(3_600_000);
    expect(await allowedOf(counters, rate('exact'), 5)).toEqual({ allowed: 0, errors: [] });
  });
});

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('counters on the database clock', unreachable), () => {
  it.each(['exact', 'approximate'] as const)('%s: a replica whose clock runs 60 s ahead admits nothing more in the window', async (consistency) => {
    const right = await opener.open();
    const ahead = await opener.open(opener.lastSchema());
    const real = 1_800_000_000_000;
    const a = countersOf(right, () => real);
    const b = countersOf(ahead, () => real + 60_000);
    const first = await allowedOf(a, rate(consistency), 5);
    // A's counts are all in the table (approximate ones are otherwise added in batches).
    await a.close();
    const second = await allowedOf(b, rate(consistency), 5);
    expect(first).toEqual({ allowed: 5, errors: [] });
    expect(second).toEqual({ allowed: 0, errors: [] });
  });

  it("a replica whose clock runs 60 s ahead does not prune another replica's key still in its window", async () => {
    const right = await opener.open();
    const ahead = await opener.open(opener.lastSchema());
    const real = 1_800_000_000_000;
    const a = countersOf(right, () => real);
    const b = countersOf(ahead, () => real + 60_000);
    expect((await allowedOf(a, rate('exact'), 5)).allowed).toBe(5);
    await a.close();
    // B's prune of idle rows (every minute) would otherwise delete the key's row as idle.
    await (b as unknown as { prune(): Promise<void> }).prune();
    const again = countersOf(right, () => real);
    expect(await allowedOf(again, rate('exact'), 1)).toEqual({ allowed: 0, errors: [] });
  });

  it('a wall clock stepped forward on one replica does not open a new window', async () => {
    const right = await opener.open();
    const stepped = await opener.open(opener.lastSchema());
    const wall = steppedWallClock();
    const a = countersOf(right, wallClock);
    const b = countersOf(stepped);
    expect((await allowedOf(a, rate('exact'), 3)).allowed).toBe(3);
    expect((await allowedOf(b, rate('exact'), 2)).allowed).toBe(2);
    // B's wall clock is stepped 60 s forward (A's stays right).
    wall.step(60_000);
    expect(await allowedOf(b, rate('exact'), 5)).toEqual({ allowed: 0, errors: [] });
    expect(await allowedOf(a, rate('exact'), 1)).toEqual({ allowed: 0, errors: [] });
  });

  it('a replica that cannot read the database clock fails its steps rather than counting on its own clock', async () => {
    const store = await opener.open();
    const noClock = { sharing: { ...store.sharing, databaseTime: () => Promise.reject(new Error('database unavailable: the clock')) } };
    const counters = countersOf(noClock);
    for (const consistency of ['exact', 'approximate'] as const) {
      const { allowed, errors } = await allowedOf(counters, rate(consistency), 2);
      expect(allowed).toBe(0);
      expect(errors).toEqual([expect.stringMatching(/database unavailable/), expect.stringMatching(/database unavailable/)]);
    }
    expect(await store.sharedCounters.counterUsage(0)).toEqual([]);
  });

  it('a replica that could not read the database clock at start counts on it once the database is back', async () => {
    const right = await opener.open();
    const schema = opener.lastSchema();
    const proxy = await startTcpProxy(pgTarget());
    closers.push(() => proxy.close());
    const ahead = await PostgresStore.open(schemaUrl(schema, proxy.port), { ...TEST_POOL, schema, connectionTimeoutMs: 1000 });
    closers.push(() => ahead.close());
    const real = 1_800_000_000_000;
    const a = countersOf(right, () => real);
    expect((await allowedOf(a, rate('exact'), 5)).allowed).toBe(5);
    // B starts while the database is away (its first clock read fails), then the database is back.
    await proxy.cut();
    const b = countersOf(ahead, () => real + 60_000);
    await (b as unknown as { prune(): Promise<void> }).prune();
    await proxy.restore();
    expect(await allowedOf(b, rate('exact'), 5)).toEqual({ allowed: 0, errors: [] });
  });

  it('a deny rate control fails closed while the database clock cannot be read; on_error allow lets the step through', async () => {
    const store = await opener.open();
    const schema = opener.lastSchema();
    const server = await startTestServer({
      env: { DATABASE_URL: schemaUrl(schema), GUARD_COUNTER_TIMEOUT_MS: '500' },
      storeOptions: { postgres: { connectionTimeoutMs: 1000, listenerRetryMs: 100 } },
      wrapStore: (real: Store) =>
        new Proxy(real, {
          get(target, prop, receiver) {
            if (prop === 'sharing') return { ...target.sharing, databaseTime: () => Promise.reject(new Error('database unavailable: the clock')) };
            return Reflect.get(target, prop, receiver);
          },
        }),
    });
    closers.push(() => server.close());
    const app = server.app;
    expect((await app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'bot' } })).statusCode).toBeLessThan(300);
    for (const [name, onError] of [['strict', 'deny'], ['lax', 'allow']] as const) {
      const data = {
        scope: { step_types: ['tool'], stages: ['pre'] },
        selector: { path: '*' },
        evaluator: { name: 'rate', config: { limit: 100, window: '1m', key: 'context.user_id', on_error: onError } },
        action: { decision: 'deny' },
      };
      const created = await app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name, data } });
      expect(created.statusCode).toBe(201);
      const id = created.json<{ control_id: number }>().control_id;
      expect((await app.inject({ method: 'POST', url: `/api/v1/agents/bot/controls/${id}`, payload: {} })).statusCode).toBe(200);
    }
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/evaluation',
      payload: { agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'search', input: {}, context: { user_id: 'ann' } } },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ decision: string; matches: Array<{ control_name: string; error?: string }>; errors: Array<{ control_name: string }> }>();
    expect(body.decision).toBe('deny');
    expect(body.matches.map((m) => [m.control_name, m.error])).toEqual([['strict', expect.stringMatching(/database unavailable/)]]);
    expect(body.errors.map((e) => e.control_name)).toEqual(['lax']);
    // Nothing was counted on the replica's own clock.
    expect(await store.sharedCounters.counterUsage(0)).toEqual([]);
  });

  it("a replica's sessions and counters read one clock: one reading at start serves a repeat control's steps", async () => {
    await opener.open();
    const schema = opener.lastSchema();
    let readings = 0;
    const server = await startTestServer({
      env: { DATABASE_URL: schemaUrl(schema) },
      storeOptions: { postgres: { connectionTimeoutMs: 1000, listenerRetryMs: 100 } },
      wrapStore: (real: Store) =>
        new Proxy(real, {
          get(target, prop, receiver) {
            if (prop !== 'sharing' || target.sharing.mode !== 'shared') return Reflect.get(target, prop, receiver);
            const sharing = target.sharing;
            return { ...sharing, databaseTime: () => (readings++, sharing.databaseTime()) };
          },
        }),
    });
    closers.push(() => server.close());
    const app = server.app;
    expect((await app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'bot' } })).statusCode).toBeLessThan(300);
    const data = {
      scope: { step_types: ['tool'], stages: ['pre'] },
      selector: { path: '*' },
      evaluator: { name: 'repeat', config: { max: 2, window: '1m' } },
      action: { decision: 'deny' },
    };
    const created = await app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'loop', data } });
    expect(created.statusCode).toBe(201);
    const id = created.json<{ control_id: number }>().control_id;
    expect((await app.inject({ method: 'POST', url: `/api/v1/agents/bot/controls/${id}`, payload: {} })).statusCode).toBe(200);
    const decisions: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/evaluation',
        payload: { agent_name: 'bot', stage: 'pre', session_id: 'run-1', step: { type: 'tool', name: 'search', input: { q: 'x' } } },
      });
      decisions.push(res.json<{ decision: string }>().decision);
    }
    expect(decisions).toEqual(['allow', 'allow', 'deny']);
    expect(readings).toBe(1);
  });
});
