/**
 * Attacks on sessions shared by replicas on PostgreSQL (issue #37, eighth pass).
 */
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { SharedSessions } from '../../src/sessions/shared-sessions.js';
import { PostgresDatabase } from '../../src/store/postgres/database.js';
import { PostgresSessions } from '../../src/store/postgres/sessions.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { TEST_POOL, connectedClients, lockWaits, pgRequired, pgUrl, pgSuiteTitle, pgUnreachable, schemaUrl, storeOpener } from './pg.js';

const unreachable = await pgUnreachable();
const opener = storeOpener('guard_eighth', unreachable);
const label = (l: string) => [{ label: l, control_id: 1, control_name: 'mark', stage: 'post' as const, step_name: 'fetch_url', added_at: 0 }];

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('eighth-pass session attacks on PostgreSQL', unreachable), () => {
  it.each([-3, -15])('a label is added on a server set to print fewer float digits than it holds (extra_float_digits = %i)', async (digits) => {
    await opener.open();
    const schema = opener.lastSchema();
    const url = new URL(pgUrl);
    url.searchParams.set('options', `${url.searchParams.get('options') ?? ''} -c extra_float_digits=${digits}`.trim());
    const store = await PostgresStore.open(url.href, { ...TEST_POOL, schema });
    const other = await opener.open(schema);
    const [holder, watcher] = await connectedClients(schemaUrl(schema), 2);
    try {
      // Epoch times are 13 digits of milliseconds: printed with 12 significant digits (or 1),
      // the time the session began comes back rounded by milliseconds or more.
      const step = (await store.sharedSessions.beginSessionStep('bot', 's', 1_765_000_000_123.375, 0, 10))!;
      await store.sharedSessions.addSessionLabels('bot', 's', step, label('untrusted'));
      expect([...(await other.sharedSessions.beginSessionStep('bot', 's', 1_765_000_000_200, 0, 10))!.labels]).toEqual(['untrusted']);
      // A new session begun by a batch of two steps, then labelled, likewise.
      const [a] = await Promise.all([
        store.sharedSessions.beginSessionStep('bot', 't', 1_765_000_000_456.875, 0, 10),
        store.sharedSessions.beginSessionStep('bot', 'u', 1_765_000_000_456.875, 0, 10),
      ]);
      await store.sharedSessions.addSessionLabels('bot', 't', a!, label('untrusted'));
      expect([...(await other.sharedSessions.beginSessionStep('bot', 't', 1_765_000_000_500, 0, 10))!.labels]).toEqual(['untrusted']);
      // A new session begun alone (its batch found the count's row taken), likewise.
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM session_count FOR UPDATE');
      const alone = Promise.resolve(store.sharedSessions.beginSessionStep('bot', 'v', 1_765_000_000_789.625, 0, 10));
      await expect.poll(async () => (await watcher.query(lockWaits('%session_begin_step(%'))).rows).toEqual([{ n: 1 }]);
      await holder.query('COMMIT');
      await store.sharedSessions.addSessionLabels('bot', 'v', (await alone)!, label('untrusted'));
      expect([...(await other.sharedSessions.beginSessionStep('bot', 'v', 1_765_000_000_800, 0, 10))!.labels]).toEqual(['untrusted']);
    } finally {
      await store.close();
      await Promise.all([holder.end(), watcher.end()]);
    }
  });

  it('a replica whose clock reading waited behind a busy event loop does not run behind the database and have its live session pruned by another replica', async () => {
    const other = await opener.open();
    const schema = opener.lastSchema();
    const database = await PostgresDatabase.open(pgUrl, { schema });
    const [watcher] = await connectedClients(schemaUrl(schema), 1);
    const dbNow = async () => Number((await watcher.query<{ ms: string }>('SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms')).rows[0]!.ms);
    // The replica's first clock reading is answered while its event loop is busy for 4 s
    // (a long synchronous evaluation, a pause): the answer waits in the socket meanwhile.
    let stalled = false;
    database.pool.on('acquire', (client: pg.PoolClient) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const sent = query(...args);
        if (!stalled && String(args[0]).includes('clock_timestamp')) {
          stalled = true;
          const until = performance.now() + 4000;
          while (performance.now() < until);
        }
        return sent;
      };
    });
    const sessions = new SharedSessions(new PostgresSessions(database), { sessionTtlMs: 60_000, sessionMax: 10 });
    try {
      const step = (await sessions.begin('bot', 's'))!;
      expect(stalled).toBe(true);
      await sessions.add('bot', 's', step, [{ label: 'untrusted', control_id: 1, control_name: 'mark' }], 'post', 'fetch_url');
      // Another replica prunes sessions idle more than 1.5 s: 's' took its step just now.
      await other.sharedSessions.pruneSessions((await dbNow()) - 1500);
      expect([...(await other.sharedSessions.beginSessionStep('bot', 's', await dbNow(), 0, 10))!.labels]).toEqual(['untrusted']);
    } finally {
      await sessions.close();
      await watcher.end();
      await database.close();
    }
  });
});
