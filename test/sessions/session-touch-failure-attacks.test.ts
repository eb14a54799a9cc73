/**
 * Attacks on the sweep of issue #37's fix (second pass): the sweep deletes expired file rows
 * only once every touched row was written, so a file whose writes keep failing never has
 * its expired rows deleted. Does the bound then fill for good, or a label go missing?
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

/** The store's rows, with writes of touched rows failing while `broken` (a busy or full file). */
function flaky(rows: SessionRowStore) {
  const state = { broken: true, deletes: 0 };
  const store: SessionRowStore = {
    loadSessions: (after) => rows.loadSessions(after),
    saveSession: (s, fresh) => rows.saveSession(s, fresh),
    touchSessions: (s) => {
      if (state.broken) throw new Error('SQLITE_BUSY');
      rows.touchSessions(s);
    },
    saveSessionLabels: (a, s, l) => rows.saveSessionLabels(a, s, l),
    deleteExpiredSessions: (before) => {
      state.deletes++;
      rows.deleteExpiredSessions(before);
    },
  };
  return { store, state };
}

describe('session attacks on one server: failing row writes', () => {
  it('while touched rows cannot be written the bound still frees expired sessions, and a live label survives a restart once writes return', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'guard-sess-touch-')), 'guard.db');
    let now = 10_000;
    const sqlite = new SqliteStore(path);
    const { store, state } = flaky(sqlite.sessionRows);
    const first = new MemorySessions(settings, store, () => now, 'by-caller');
    first.add('bot', 'victim', first.begin('bot', 'victim')!, mark('untrusted'), 'post', 'fetch_url');
    expect(first.begin('bot', 'filler')).not.toBeNull();
    // The attacker keeps both alive with steps whose rows cannot be written, then floods new ids.
    for (let round = 0; round < 20; round++) {
      now += 900;
      expect(first.begin('bot', 'victim')).not.toBeNull();
      expect(first.begin('bot', 'filler')).not.toBeNull();
      expect(first.begin('bot', `flood-${round}`)).toBeNull();
      expect(first.size).toBeLessThanOrEqual(settings.sessionMax);
    }
    expect(state.deletes).toBe(0);
    // The filler goes idle: past its TTL it frees its slot although the file's delete waits.
    for (let i = 0; i < 2; i++) {
      now += 600;
      expect([...first.begin('bot', 'victim')!.labels]).toEqual(['untrusted']);
    }
    expect(first.begin('bot', 'newcomer')).not.toBeNull();
    expect(first.size).toBeLessThanOrEqual(settings.sessionMax);
    // Writes come back: the next sweep writes the victim's row, then deletes the expired ones.
    state.broken = false;
    now += 200;
    first.sweep();
    expect(state.deletes).toBe(1);
    await first.close();
    await sqlite.close();

    const reopened = new SqliteStore(path);
    const second = new MemorySessions(settings, reopened.sessionRows, () => now, 'by-caller');
    try {
      expect([...second.begin('bot', 'victim')!.labels]).toEqual(['untrusted']);
      expect(second.size).toBeLessThanOrEqual(settings.sessionMax);
    } finally {
      await second.close();
      await reopened.close();
    }
  });
});
