/** Sessions as each kind of database keeps them (docs/sessions.md). */

/** A label of a stored session, with the control and step that added it (times: epoch ms). */
export interface StoredSessionLabel {
  label: string;
  control_id: number;
  control_name: string;
  stage: 'pre' | 'post';
  step_name: string;
  added_at: number;
}

/** One session of one agent (docs/sessions.md). */
export interface StoredSession {
  agent_name: string;
  session_id: string;
  first_seen: number;
  last_seen: number;
  steps: number;
  labels: StoredSessionLabel[];
}

/** The SQLite file's sessions: kept in memory by the server, written through, read back when it starts. */
export interface SessionRowStore {
  /** Every session whose last step is after `after`, with its labels. */
  loadSessions(after: number): StoredSession[];
  /** Writes the session's row (not its labels); `fresh` also drops labels of an expired session of the same id. */
  saveSession(session: Omit<StoredSession, 'labels'>, fresh: boolean): void;
  /** Writes the rows of sessions that took steps since they were last written, in one transaction. */
  touchSessions(sessions: ReadonlyArray<Omit<StoredSession, 'labels'>>): void;
  saveSessionLabels(agentName: string, sessionId: string, labels: readonly StoredSessionLabel[]): void;
  /** Deletes sessions (and their labels) whose last step is at or before `before`. */
  deleteExpiredSessions(before: number): void;
}

/** A step's start in a shared session: the labels it carries, and the session's epoch its labels go into. */
export interface SharedSessionStep {
  readonly labels: ReadonlySet<string>;
  readonly epoch: number;
  /**
   * When the epoch began (the session's first_seen): with the number, it names the epoch
   * across a prune, after which a session begun again under the id is at epoch 0 again.
   */
  readonly since: number;
}

/**
 * PostgreSQL's sessions, shared by the replicas and exact: each step reads the session's
 * labels in the statement that counts it, and labels are added by an upsert that never
 * loses a concurrent step's labels.
 */
export interface SharedSessionStore {
  /**
   * Counts a step of the session and reads its labels. A session idle since `expiredBefore`
   * starts again empty. A new session beyond `max` sessions is refused: null. Answered at
   * once (no promise) when the replica's cache holds the session.
   */
  beginSessionStep(agentName: string, sessionId: string, now: number, expiredBefore: number, max: number): SharedSessionStep | Promise<SharedSessionStep | null>;
  /** Adds labels to the session's epoch the step began in; nothing when the session has left it. */
  addSessionLabels(agentName: string, sessionId: string, step: SharedSessionStep, labels: readonly StoredSessionLabel[]): Promise<void>;
  readSession(agentName: string, sessionId: string, expiredBefore: number): Promise<StoredSession | null>;
  /** Deletes sessions idle since `expiredBefore` and recounts the rest; returns how many are left. */
  pruneSessions(expiredBefore: number): Promise<number>;
  /** The database server's clock as the answer arrives, in ms since the epoch, as SharedParts reads it (store-sharing.ts). */
  databaseTime(): Promise<number>;
}
