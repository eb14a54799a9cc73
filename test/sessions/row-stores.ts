/** A session row store (SQLite's) whose writes of new sessions fail while `state.busy` (a busy or full file). */
import type { SessionRowStore } from '../../src/store/session-store.js';

export function busySaves(rows: SessionRowStore, busy = false): { store: SessionRowStore; state: { busy: boolean } } {
  const state = { busy };
  const store: SessionRowStore = {
    loadSessions: (after) => rows.loadSessions(after),
    saveSession: (s, fresh) => {
      if (state.busy) throw new Error('SQLITE_BUSY');
      rows.saveSession(s, fresh);
    },
    touchSessions: (s) => rows.touchSessions(s),
    saveSessionLabels: (a, s, l) => rows.saveSessionLabels(a, s, l),
    deleteExpiredSessions: (before) => rows.deleteExpiredSessions(before),
  };
  return { store, state };
}
