/**
 * Attacks on the sessions of one server (issue #37, third pass): a new session's row
 * whose write failed, and what a server killed afterwards keeps.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemorySessions } from '../../src/sessions/index.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { busySaves } from './row-stores.js';

const mark = (label: string) => [{ label, control_id: 7, control_name: `mark-${label}` }];
const settings = { sessionTtlMs: 60_000, sessionMax: 10 };

describe('session attacks on one server: a new session whose row could not be written', () => {
  it('a label added after the first step failed to write the session row survives the server being killed', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-sess-third-')), 'guard.db');
    const now = 10_000;
    const sqlite = new SqliteStore(path);
    const { store: flaky, state } = busySaves(sqlite.sessionRows, true);
    const first = new MemorySessions(settings, flaky, () => now, 'by-caller');
    // The session's first step fails (a 5xx): its row could not be written.
    expect(() => first.begin('bot', 'victim')).toThrow('SQLITE_BUSY');
    state.busy = false;
    // The client retries; the step adds a label, written at once and answered.
    first.add('bot', 'victim', first.begin('bot', 'victim')!, mark('untrusted'), 'post', 'fetch_url');
    expect([...first.begin('bot', 'victim')!.labels]).toEqual(['untrusted']);
    // Killed before the once-a-second write: no writeTouched, no close. Another process opens the file.
    const reopened = new SqliteStore(path);
    const second = new MemorySessions(settings, reopened.sessionRows, () => now + 1, 'by-caller');
    try {
      expect([...second.begin('bot', 'victim')!.labels]).toEqual(['untrusted']);
    } finally {
      await second.close();
      await reopened.close();
      await sqlite.close();
    }
  });
});

describe('session attacks on one server: the TTL boundary', () => {
  it('a step one millisecond before the TTL keeps the labels; at the TTL the session is gone for the step, the GET and the file alike', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-sess-ttl-')), 'guard.db');
    let now = 10_000;
    const sqlite = new SqliteStore(path);
    const sessions = new MemorySessions(settings, sqlite.sessionRows, () => now, 'by-caller');
    try {
      sessions.add('bot', 's', sessions.begin('bot', 's')!, mark('untrusted'), 'post', 'fetch_url');
      now += settings.sessionTtlMs - 1;
      expect([...sessions.begin('bot', 's')!.labels]).toEqual(['untrusted']);
      sessions.writeTouched();
      now += settings.sessionTtlMs;
      expect(await sessions.info('bot', 's')).toBeNull();
      expect(sqlite.sessionRows.loadSessions(now - settings.sessionTtlMs)).toEqual([]);
      expect([...sessions.begin('bot', 's')!.labels]).toEqual([]);
    } finally {
      await sessions.close();
      await sqlite.close();
    }
  });
});
