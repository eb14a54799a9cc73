/**
 * Sessions of one server (src/sessions/memory-sessions.ts) with an injected clock and a
 * real SQLite file: TTL expiry, the bound (never evicting a held session), write-through.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemorySessions } from '../../src/sessions/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const mark = (label: string) => [{ label, control_id: 7, control_name: `mark-${label}` }];

describe('sessions in memory', () => {
  it('forget a session idle past its TTL, and count it from one again', () => {
    let now = 1_000;
    const sessions = new MemorySessions({ sessionTtlMs: 10_000, sessionMax: 10 }, undefined, () => now);
    sessions.add('bot', 's', sessions.begin('bot', 's')!, mark('seen'), 'post', 'fetch_url');
    now += 9_999;
    expect([...sessions.begin('bot', 's')!.labels]).toEqual(['seen']);
    now += 10_000;
    const fresh = sessions.begin('bot', 's')!;
    expect([...fresh.labels]).toEqual([]);
    now += 1;
    return expect(sessions.info('bot', 's')).resolves.toMatchObject({ steps: 1, labels: [] });
  });

  it('a label added for a session that expired and began again meanwhile is not kept', () => {
    let now = 0;
    const sessions = new MemorySessions({ sessionTtlMs: 100, sessionMax: 10 }, undefined, () => now);
    const old = sessions.begin('bot', 's')!;
    now = 500;
    sessions.begin('bot', 's');
    sessions.add('bot', 's', old, mark('stale'), 'post', 'x');
    expect([...sessions.begin('bot', 's')!.labels]).toEqual([]);
  });

  it('at the bound refuse new sessions, keep held ones, and make room once some expire', () => {
    let now = 0;
    const sessions = new MemorySessions({ sessionTtlMs: 1_000, sessionMax: 2 }, undefined, () => now);
    sessions.add('bot', 'a', sessions.begin('bot', 'a')!, mark('deny_me'), 'post', 'x');
    expect(sessions.begin('bot', 'b')).not.toBeNull();
    for (let i = 0; i < 100; i++) expect(sessions.begin('bot', `flood-${i}`)).toBeNull();
    expect(sessions.size).toBe(2);
    expect([...sessions.begin('bot', 'a')!.labels]).toEqual(['deny_me']);
    now = 5_000;
    expect(sessions.begin('bot', 'c')).not.toBeNull();
  });

  it('never write the waiting row of an expired session over the row of the session begun again under its id', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-mem-sessions-')), 'guard.db');
    let now = 10_000;
    const store = new SqliteStore(path);
    const first = new MemorySessions({ sessionTtlMs: 1_000, sessionMax: 10 }, store.sessionRows, () => now);
    first.begin('bot', 's');
    // A second step: its row waits for the next write of touched rows.
    first.begin('bot', 's');
    now = 12_000;
    // Expired: begun again, its new row written at once; a label added to it.
    const again = first.begin('bot', 's')!;
    first.add('bot', 's', again, mark('private_data'), 'post', 'get_customer');
    first.writeTouched();
    await first.close();
    await store.close();
    const reopened = new SqliteStore(path);
    const second = new MemorySessions({ sessionTtlMs: 1_000, sessionMax: 10 }, reopened.sessionRows, () => now);
    expect(await second.info('bot', 's')).toMatchObject({ steps: 1, first_seen: new Date(12_000).toISOString(), labels: [{ label: 'private_data' }] });
    await second.close();
    await reopened.close();
  });

  it('write through to the SQLite file and come back after a restart, expired ones left out', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-mem-sessions-')), 'guard.db');
    let now = 10_000;
    const store = new SqliteStore(path);
    const first = new MemorySessions({ sessionTtlMs: 1_000, sessionMax: 10 }, store.sessionRows, () => now);
    first.add('bot', 'kept', first.begin('bot', 'kept')!, mark('untrusted_content'), 'post', 'fetch_url');
    first.begin('bot', 'kept');
    now = 10_500;
    first.begin('bot', 'later');
    await first.close();
    await store.close();
    now = 11_200;
    const reopened = new SqliteStore(path);
    const second = new MemorySessions({ sessionTtlMs: 1_000, sessionMax: 10 }, reopened.sessionRows, () => now);
    expect(await second.info('bot', 'kept')).toBeNull();
    now = 10_900;
    const again = new MemorySessions({ sessionTtlMs: 1_000, sessionMax: 10 }, reopened.sessionRows, () => now);
    expect(await again.info('bot', 'kept')).toMatchObject({ steps: 2, labels: [{ label: 'untrusted_content', control_name: 'mark-untrusted_content', step_name: 'fetch_url' }] });
    expect(await again.info('bot', 'later')).toMatchObject({ steps: 1 });
    await second.close();
    await again.close();
    await reopened.close();
  });

  describe('the once-a-second write of touched rows', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('comes on its timer, or only when asked with the schedule left to the caller', async () => {
      vi.useFakeTimers();
      const path = join(mkdtempSync(join(tmpdir(), 'guard-mem-sessions-')), 'guard.db');
      const store = new SqliteStore(path);
      const now = () => 10_000;
      const timed = new MemorySessions({ sessionTtlMs: 60_000, sessionMax: 10 }, store.sessionRows, now);
      timed.begin('bot', 'timed');
      timed.begin('bot', 'timed');
      const byCaller = new MemorySessions({ sessionTtlMs: 60_000, sessionMax: 10 }, store.sessionRows, now, 'by-caller');
      byCaller.begin('bot', 'asked');
      byCaller.begin('bot', 'asked');
      vi.advanceTimersByTime(5_000);
      const rows = () => Object.fromEntries(store.sessionRows.loadSessions(0).map((s) => [s.session_id, s.steps]));
      expect(rows()).toEqual({ timed: 2, asked: 1 });
      byCaller.writeTouched();
      expect(rows()).toEqual({ timed: 2, asked: 2 });
      await timed.close();
      await byCaller.close();
      await store.close();
    });
  });
});
