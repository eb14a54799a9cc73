/**
 * The sessions of one server with the SQLite file refusing the once-a-second write of
 * touched rows (issue #37, third pass): sessions that took steps wait in a list to be
 * written, and one that expires meanwhile stays in it until a write succeeds. A flood of
 * sessions cycling through a short TTL then grows that list, and the memory it holds,
 * without bound although at most GUARD_SESSION_MAX sessions are held.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { MemorySessions } from '../../src/sessions/index.js';
import type { SessionRowStore } from '../../src/store/session-store.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';

const settings = { sessionTtlMs: 1_000, sessionMax: 2 };

/** A full collection, so that what is still reachable is what something holds. */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('session attacks on one server: the list of rows waiting to be written', () => {
  it('sessions expiring while touched rows cannot be written are not held beyond the bound', async () => {
    const gc = collector();
    const sqlite = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'guard-sess-touched-')), 'guard.db'));
    const rows = sqlite.sessionRows;
    const failing: SessionRowStore = {
      loadSessions: (after) => rows.loadSessions(after),
      saveSession: (s, fresh) => rows.saveSession(s, fresh),
      touchSessions: () => {
        throw new Error('SQLITE_BUSY');
      },
      saveSessionLabels: (a, s, l) => rows.saveSessionLabels(a, s, l),
      deleteExpiredSessions: (before) => rows.deleteExpiredSessions(before),
    };
    let now = 10_000;
    const sessions = new MemorySessions(settings, failing, () => now, 'by-caller');
    // Each session's label set lives as long as the session's entry: a handle on what memory holds.
    const held: WeakRef<object>[] = [];
    try {
      for (let i = 0; i < 2_000; i++) {
        now += settings.sessionTtlMs + 1;
        const step = sessions.begin('bot', `flood-${i}`);
        expect(step).not.toBeNull();
        held.push(new WeakRef(step!.labels));
        // A second step: its row is touched (waiting for the once-a-second write, which fails).
        expect(sessions.begin('bot', `flood-${i}`)).not.toBeNull();
        sessions.writeTouched();
        expect(sessions.size).toBeLessThanOrEqual(settings.sessionMax);
      }
      // A WeakRef keeps its target for the rest of the job that made it: collect in a later turn.
      await new Promise((resolve) => setImmediate(resolve));
      gc();
      const alive = held.filter((r) => r.deref() !== undefined).length;
      // The sessions held, and a few more in flight: not every session since the file failed.
      expect(alive).toBeLessThanOrEqual(2 * settings.sessionMax);
    } finally {
      await sessions.close();
      await sqlite.close();
    }
  });
});
