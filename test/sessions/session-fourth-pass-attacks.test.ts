/**
 * Attacks on the sessions of one server (issue #37, fourth pass): around a new session
 * whose row write failed and was dropped (the id begun again, its old labels, the bound).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSessionState, MemorySessions } from '../../src/sessions/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { busySaves } from './row-stores.js';

const mark = (label: string) => [{ label, control_id: 7, control_name: `mark-${label}` }];
const settings = { sessionTtlMs: 60_000, sessionMax: 2 };

describe('session attacks on one server: a session begun again whose new row could not be written', () => {
  it('the expired session\'s label comes back neither in memory nor after a restart, and the bound counts only live sessions', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-sess-fourth-')), 'guard.db');
    let now = 10_000;
    const sqlite = new SqliteStore(path);
    const { store: flaky, state } = busySaves(sqlite.sessionRows, false);
    const first = new MemorySessions(settings, flaky, () => now, 'by-caller');
    // 'ci' passed its tests; idle past its TTL, the id is begun again and its new row fails, twice.
    first.add('bot', 'ci', first.begin('bot', 'ci')!, mark('tests_passed'), 'post', 'run_tests');
    now += settings.sessionTtlMs;
    state.busy = true;
    expect(() => first.begin('bot', 'ci')).toThrow('SQLITE_BUSY');
    expect(() => first.begin('bot', 'other')).toThrow('SQLITE_BUSY');
    expect(first.size).toBe(0);
    // Killed now: the file still holds the old row; another process opens it.
    const reopened = new SqliteStore(path);
    const second = new MemorySessions(settings, reopened.sessionRows, () => now + 1, 'by-caller');
    state.busy = false;
    try {
      expect([...second.begin('bot', 'ci')!.labels]).toEqual([]);
      // The first server, its file back: the id is a new session, and the bound has room for two.
      expect([...first.begin('bot', 'ci')!.labels]).toEqual([]);
      expect(first.begin('bot', 'other')).not.toBeNull();
      expect(first.begin('bot', 'third')).toBeNull();
      expect(first.size).toBe(2);
    } finally {
      await first.close();
      await second.close();
      await reopened.close();
      await sqlite.close();
    }
  });
});

describe('session attacks on one server: the wall clock stepped', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('a wall clock stepped a minute forward (NTP correcting a clock that ran behind) ages no session: the label stays', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-sess-wall-')), 'guard.db');
    const sqlite = new SqliteStore(path);
    const wall = Date.now.bind(Date);
    let stepped = 0;
    vi.spyOn(Date, 'now').mockImplementation(() => wall() + stepped);
    // Made as a server makes it, with the clock a server's sessions get.
    const sessions = createSessionState(sqlite, settings);
    try {
      const step = (await sessions.begin('bot', 'victim'))!;
      await sessions.add('bot', 'victim', step, mark('untrusted_content'), 'post', 'fetch_url');
      stepped = settings.sessionTtlMs + 1000;
      expect([...(await sessions.begin('bot', 'victim'))!.labels]).toEqual(['untrusted_content']);
    } finally {
      await sessions.close();
      await sqlite.close();
    }
  });
});
