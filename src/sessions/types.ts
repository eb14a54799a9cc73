/**
 * PURE: what the server asks of its sessions (docs/sessions.md). A step of a session is
 * begun before it is evaluated (its labels are read and the step counted), and the labels
 * its matches added are stored before its answer goes out.
 */
import type { SessionInfo } from '../model/index.js';

/** A label a step's match added: the label and the control (engine/session-scope.ts AddedLabel). */
export interface NewLabel {
  readonly label: string;
  readonly control_id: number;
  readonly control_name: string;
}

/** A begun step: the session's labels before it, and where labels it adds go. */
export interface SessionStep {
  readonly labels: ReadonlySet<string>;
  /** The session's epoch: labels added for an epoch the session has left are not kept. */
  readonly epoch: number;
}

export interface SessionSettings {
  /** A session is forgotten this long after its last step (GUARD_SESSION_TTL). */
  readonly sessionTtlMs: number;
  /** Sessions kept at most (GUARD_SESSION_MAX): a new session beyond is refused. */
  readonly sessionMax: number;
}

export interface SessionState {
  /** Counts a step of the session; null: it would be a new session and the bound is reached. */
  begin(agentName: string, sessionId: string): SessionStep | null | Promise<SessionStep | null>;
  /** Stores labels a step added (an empty list stores nothing). */
  add(agentName: string, sessionId: string, step: SessionStep, labels: readonly NewLabel[], stage: 'pre' | 'post', stepName: string): void | Promise<void>;
  /** The session as GET /sessions/{id} shows it; null when unknown or expired. */
  info(agentName: string, sessionId: string): Promise<SessionInfo | null>;
  close(): Promise<void>;
}
