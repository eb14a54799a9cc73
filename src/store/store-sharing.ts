/**
 * What differs between a store kept by one server (SQLite) and one shared by replicas
 * (PostgreSQL), as one member of Store whose `mode` says which. One union rather than
 * optional members per database: a caller switches on `mode` once and the compiler
 * then knows every part is there, and no store can be half shared (shared counters
 * without the notifications replicas need, say).
 */
import type { CounterRowStore, SharedCounterStore } from '../counting/types.js';
import type { SessionRowStore, SharedSessionStore } from './session-store.js';

/** What a change notification says: the agents whose controls changed, or null for "any". */
export interface ChangeInfo {
  agents: string[] | null;
  /**
   * The store revision the change produced, when the notification says (PostgreSQL's do).
   * Replicas compare it with the revisions they read, so that a late notification is
   * never mistaken for one that was lost.
   */
  revision?: number;
}

/** Where a replica hears of writes and reads the revision (server/replica-sync.ts). */
export interface ChangeSource {
  revision(): Promise<number>;
  /**
   * Calls `listener` after another instance (or this one) commits a write to controls,
   * agents or links. Returns the unsubscribe.
   */
  onChange(listener: (info: ChangeInfo) => void): () => void;
}

/** One server owns the database: it counts and keeps sessions in memory, writing them through. */
export interface LocalParts {
  readonly mode: 'local';
  /** Where rate and budget counters of long windows persist. */
  readonly counterRows: CounterRowStore;
  /** Where sessions are written through. */
  readonly sessionRows: SessionRowStore;
}

/** Replicas share the database: counters and sessions live in it, and writes are announced. */
export interface SharedParts {
  readonly mode: 'shared';
  /** Counters shared by the replicas. */
  readonly counters: SharedCounterStore;
  /** Sessions shared by the replicas. */
  readonly sessions: SharedSessionStore;
  /** Change notifications of writes through any replica. */
  onChange(listener: (info: ChangeInfo) => void): () => void;
  /**
   * The database server's clock, in ms since the epoch: the one clock every replica times
   * its sessions and counters by (src/clock.ts).
   */
  databaseTime(): Promise<number>;
}

export type StoreSharing = LocalParts | SharedParts;
