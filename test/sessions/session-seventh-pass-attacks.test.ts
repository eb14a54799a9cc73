/**
 * Attacks on the sessions of one server (issue #37, seventh pass): the sweep while the
 * SQLite file refuses the delete of expired rows (a lock held elsewhere, a full disk).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemorySessions } from '../../src/sessions/index.js';
import type { SessionRowStore } from '../../src/store/session-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const mark = (label: string) => [{ label, control_id: 7, control_name: `mark-${label}` }];
const settings = { sessionTtlMs: 1_000, sessionMax: 2 };

/** The store's rows, with the delete of expired rows failing while `refused`. */
function refusingDeletes(rows: SessionRowStore) {
  const state = { refused: true };
  const store: SessionRowStore = {
    loadSessions: (after) => rows.loadSessions(after),
    saveSession: (s, fresh) => rows.saveSession(s, fresh),
    touchSessions: (s) => rows.touchSessions(s),
    saveSessionLabels: (a, s, l) => rows.saveSessionLabels(a, s, l),
    deleteExpiredSessions: (before) => {
      if (state.refused) throw new Error('SQLITE_BUSY');
      rows.deleteExpiredSessions(before);
    },
  };
  return { store, state };
}

describe('session attacks on one server: the sweep refused by the file', () => {
  it('a sweep whose delete the file refuses throws nothing, and a new session at the bound takes the room an expired one left', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-sess-sweep-')), 'guard.db');
    let now = 10_000;
    const sqlite = new SqliteStore(path);
    const { store, state } = refusingDeletes(sqlite.sessionRows);
    const sessions = new MemorySessions(settings, store, () => now, 'by-caller');
    try {
      sessions.add('bot', 'victim', sessions.begin('bot', 'victim')!, mark('untrusted'), 'post', 'fetch_url');
      expect(sessions.begin('bot', 'idle')).not.toBeNull();
      // 'idle' expires; the victim stays live.
      now += 900;
      expect(sessions.begin('bot', 'victim')).not.toBeNull();
      now += 200;
      // At the bound, a new session sweeps first: it takes the room 'idle' left.
      expect(sessions.begin('bot', 'newcomer')).not.toBeNull();
      expect(sessions.size).toBe(2);
      // The once-a-minute sweep runs on a timer: a throw there ends the process.
      now += 100;
      expect(() => sessions.sweep()).not.toThrow();
      // Deletes come back: the expired rows go, the victim's label stays.
      state.refused = false;
      sessions.sweep();
      expect([...sessions.begin('bot', 'victim')!.labels]).toEqual(['untrusted']);
    } finally {
      await sessions.close();
      await sqlite.close();
    }
  });
});
