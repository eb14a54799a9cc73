/**
 * Sessions (docs/sessions.md): the labels steps of one agent's session share. In memory
 * for one server (written through to the SQLite file), on PostgreSQL for replicas.
 */
import { DatabaseClock, monotonicNow } from '../clock.js';
import type { Store } from '../store/types.js';
import { MemorySessions } from './memory-sessions.js';
import { SharedSessions } from './shared-sessions.js';
import type { SessionSettings, SessionState } from './types.js';

export type { NewLabel, SessionSettings, SessionState, SessionStep } from './types.js';
export { MemorySessions } from './memory-sessions.js';
export { SharedSessions } from './shared-sessions.js';

/**
 * The sessions of a server made from its store (store/types.ts Store). `clock` is the
 * replica's clock its counters read too, or a local clock (tests inject one).
 */
export function createSessionState(
  store: Pick<Store, 'sharing'>,
  settings: SessionSettings,
  clock?: DatabaseClock | (() => number),
): SessionState {
  const { sharing } = store;
  // Replicas keep the database's time on a monotonic clock (shared-sessions.ts) unless given one.
  if (sharing.mode === 'shared') return new SharedSessions(sharing.sessions, settings, clock);
  return new MemorySessions(settings, sharing.sessionRows, clock instanceof DatabaseClock ? clock.localNow : (clock ?? monotonicNow));
}
