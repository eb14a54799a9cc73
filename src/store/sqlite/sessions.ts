/**
 * Sessions in the SQLite file (docs/sessions.md). The server keeps them in memory
 * (src/sessions/) and writes each step's session row and each added label through, one
 * small statement each, so that sessions survive a restart; rows are read once, when the
 * server starts.
 */
import type Database from 'better-sqlite3';
import type { SessionRowStore, StoredSession, StoredSessionLabel } from '../types.js';
import type { SqliteDatabase } from './database.js';

interface LabelRow extends StoredSessionLabel {
  agent_name: string;
  session_id: string;
}

export class SqliteSessions implements SessionRowStore {
  readonly #load: Database.Statement<[number], Omit<StoredSession, 'labels'>>;
  readonly #loadLabels: Database.Statement<[number], LabelRow>;
  readonly #save: Database.Statement;
  readonly #dropLabels: Database.Statement<[string, string]>;
  readonly #saveLabel: Database.Statement;
  readonly #expire: Database.Statement<[number]>;
  readonly #expireLabels: Database.Statement;

  constructor(private readonly database: SqliteDatabase) {
    const db = database.db;
    this.#load = db.prepare('SELECT agent_name, session_id, first_seen, last_seen, steps FROM sessions WHERE last_seen > ?');
    this.#loadLabels = db.prepare(`SELECT l.* FROM session_labels l JOIN sessions s USING (agent_name, session_id)
      WHERE s.last_seen > ? ORDER BY l.added_at`);
    this.#save = db.prepare(`INSERT INTO sessions (agent_name, session_id, first_seen, last_seen, steps)
      VALUES (@agent_name, @session_id, @first_seen, @last_seen, @steps)
      ON CONFLICT (agent_name, session_id) DO UPDATE SET first_seen = excluded.first_seen,
        last_seen = excluded.last_seen, steps = excluded.steps`);
    this.#dropLabels = db.prepare('DELETE FROM session_labels WHERE agent_name = ? AND session_id = ?');
    this.#saveLabel = db.prepare(`INSERT OR IGNORE INTO session_labels (agent_name, session_id, label, control_id, control_name, stage, step_name, added_at)
      VALUES (@agent_name, @session_id, @label, @control_id, @control_name, @stage, @step_name, @added_at)`);
    this.#expire = db.prepare('DELETE FROM sessions WHERE last_seen <= ?');
    this.#expireLabels = db.prepare(`DELETE FROM session_labels WHERE NOT EXISTS
      (SELECT 1 FROM sessions s WHERE s.agent_name = session_labels.agent_name AND s.session_id = session_labels.session_id)`);
  }

  loadSessions(after: number): StoredSession[] {
    return this.database.read(() => {
      const sessions = new Map<string, StoredSession>();
      for (const row of this.#load.all(after)) sessions.set(`${row.agent_name}\u0000${row.session_id}`, { ...row, labels: [] });
      for (const { agent_name, session_id, ...label } of this.#loadLabels.all(after)) {
        sessions.get(`${agent_name}\u0000${session_id}`)?.labels.push({ ...label, stage: label.stage === 'post' ? 'post' : 'pre' });
      }
      return [...sessions.values()];
    });
  }

  saveSession(session: Omit<StoredSession, 'labels'>, fresh: boolean): void {
    if (!fresh) {
      this.database.read(() => this.#save.run(session));
      return;
    }
    this.database.write(() => {
      this.#dropLabels.run(session.agent_name, session.session_id);
      this.#save.run(session);
    });
  }

  touchSessions(sessions: ReadonlyArray<Omit<StoredSession, 'labels'>>): void {
    if (sessions.length === 0) return;
    this.database.write(() => {
      for (const session of sessions) this.#save.run(session);
    });
  }

  saveSessionLabels(agentName: string, sessionId: string, labels: readonly StoredSessionLabel[]): void {
    this.database.write(() => {
      for (const label of labels) this.#saveLabel.run({ agent_name: agentName, session_id: sessionId, ...label });
    });
  }

  deleteExpiredSessions(before: number): void {
    this.database.write(() => {
      this.#expire.run(before);
      this.#expireLabels.run();
    });
  }
}
