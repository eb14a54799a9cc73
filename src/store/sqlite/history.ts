/**
 * History and audit in SQLite: the change_log table. Entries are written by the
 * controls' writes (controls.ts) inside their own transaction; this module prepares the
 * insert and answers the history and audit queries.
 */
import type { ChangeEntry, WriteOrigin } from '../../model/index.js';
import { entryOf, type AuditQuery, type ChangePage, type ChangePageQuery, type HistoryLimits, type HistoryStore, type NewChangeEntry } from '../history.js';
import { epochMsOf } from '../records.js';
import type { SqliteDatabase } from './database.js';

interface EntryRow {
  id: number;
  revision: number;
  ts: number;
  actor: string;
  source: string;
  kind: string;
  op: string;
  control_id: number | null;
  control_name: string | null;
  agent_name: string | null;
  before: string | null;
  after: string | null;
  note: string | null;
  policy_id: number | null;
}

const rowToEntry = (row: EntryRow): ChangeEntry => entryOf({ ...row, ts: new Date(row.ts).toISOString() });

export class SqliteHistory implements HistoryStore {
  private readonly insert;
  private readonly ofControl;

  constructor(
    private readonly database: SqliteDatabase,
    /** SqliteStoreOptions.history: false only when measuring what history costs. */
    private readonly enabled = true,
  ) {
    this.insert = database.db.prepare(
      `INSERT INTO change_log (revision, ts, actor, source, kind, op, control_id, control_name, agent_name, before, after, note, policy_id)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.ofControl = database.db.prepare('SELECT * FROM change_log WHERE control_id = ? ORDER BY id');
  }

  /** Stores one entry (built only now, so that measuring without history skips building it); call inside the write's transaction. */
  record(revision: number, origin: WriteOrigin, build: () => NewChangeEntry): void {
    if (!this.enabled) return;
    const entry = build();
    this.insert.run(
      revision,
      Date.now(),
      origin.actor,
      origin.source,
      entry.kind,
      entry.op,
      entry.control_id,
      entry.control_name,
      entry.agent_name,
      entry.before === null ? null : JSON.stringify(entry.before),
      entry.after === null ? null : JSON.stringify(entry.after),
      entry.note,
      entry.policy_id ?? null,
    );
  }

  async pruneHistory(limits: HistoryLimits): Promise<number> {
    const db = this.database;
    const cutoff = epochMsOf(limits.before, 'before');
    let deleted = db.pruneInBatches(db.cached('DELETE FROM change_log WHERE id IN (SELECT id FROM change_log WHERE ts < ? LIMIT ?)'), cutoff);
    // The id of the oldest entry kept: everything below it goes, in batches.
    const oldestKept = db.read(() => db.cached('SELECT id FROM change_log ORDER BY id DESC LIMIT 1 OFFSET ?').pluck().get(Math.max(0, limits.maxEntries - 1))) as number | undefined;
    if (oldestKept !== undefined) {
      deleted += db.pruneInBatches(db.cached('DELETE FROM change_log WHERE id IN (SELECT id FROM change_log WHERE id < ? LIMIT ?)'), oldestKept);
    }
    return deleted;
  }

  /** Every entry of one control, oldest first (what restore decides from); call inside a transaction. */
  entriesOf(controlId: number): ChangeEntry[] {
    return (this.ofControl.all(controlId) as EntryRow[]).map(rowToEntry);
  }

  async policyHistory(policyId: number, page: ChangePageQuery): Promise<ChangePage> {
    return this.page(['policy_id = ?'], [policyId], page);
  }

  async controlHistory(controlId: number, page: ChangePageQuery): Promise<ChangePage> {
    return this.page(['control_id = ?'], [controlId], page);
  }

  async auditLog(query: AuditQuery): Promise<ChangePage> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.since !== undefined) {
      where.push('ts >= ?');
      params.push(epochMsOf(query.since, 'since'));
    }
    if (query.actor !== undefined) {
      where.push('actor = ?');
      params.push(query.actor);
    }
    return this.page(where, params, query);
  }

  /** Newest first, `limit` entries with an id below the cursor; one more read tells whether a next page exists. */
  private page(where: string[], params: unknown[], page: ChangePageQuery): ChangePage {
    const clauses = [...where, ...(page.cursor !== undefined ? ['id < ?'] : [])];
    const values = [...params, ...(page.cursor !== undefined ? [page.cursor] : [])];
    const limit = Math.max(1, Math.floor(page.limit));
    const sql = `SELECT * FROM change_log ${clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ?`;
    return this.database.read(() => {
      const rows = this.database.cached(sql).all(...values, limit + 1) as EntryRow[];
      const entries = rows.slice(0, limit).map(rowToEntry);
      return { entries, next_cursor: rows.length > limit ? (entries.at(-1)?.id ?? null) : null };
    });
  }
}
