/** Approvals of asked steps in SQLite (rules: approval-rules.ts). Each call is one IMMEDIATE transaction. */
import { newApprovalId } from '../approval-ids.js';
import { approvalAuditOf, approvalRecordOf, approvalStepOf, isApprovedToUse, type ApprovalAudit, type ApprovalRow } from '../approval-rules.js';
import type { ApprovalDecision, ApprovalQuery, ApprovalRequest, ApprovalStore, DecideOutcome } from '../types.js';
import type { SqliteDatabase } from './database.js';

/** SQLite keeps the step as JSON text. */
type SqliteApprovalRow = Omit<ApprovalRow, 'step'> & { step: string };

export class SqliteApprovals implements ApprovalStore {
  constructor(private readonly database: SqliteDatabase) {}

  async submitApproval(request: ApprovalRequest, now: number) {
    const db = this.database;
    // IMMEDIATE: a second process submitting the same step waits, then sees this one's row.
    return db.write(() => {
      const latest = (db.cached('SELECT * FROM approvals WHERE digest = ? ORDER BY seq DESC LIMIT 1').get(request.digest) as SqliteApprovalRow | undefined) ?? null;
      switch (approvalStepOf(latest && rowOf(latest), now)) {
        case 'reuse':
          return { approval: approvalRecordOf(rowOf(latest!), now), outcome: 'pending' as const };
        case 'expire': {
          const row = db.cached("UPDATE approvals SET status = 'expired', used_at = ? WHERE id = ? RETURNING *").get(now, latest!.id) as SqliteApprovalRow;
          this.audit(approvalAuditOf('expire', rowOf(row), request.actor), now);
          return { approval: approvalRecordOf(rowOf(row), now), outcome: 'expired' as const };
        }
        case 'use': {
          // Only an unused decision is taken: the same guard as PostgreSQL's.
          const row = db
            .cached("UPDATE approvals SET used_at = ? WHERE id = ? AND status IN ('approved', 'denied') AND used_at IS NULL RETURNING *")
            .get(now, latest!.id) as SqliteApprovalRow | undefined;
          if (row !== undefined) this.audit(approvalAuditOf('use', rowOf(row), request.actor), now);
          if (row !== undefined) return { approval: approvalRecordOf(rowOf(row), now), outcome: row.status === 'approved' ? ('approved' as const) : ('denied' as const) };
          break;
        }
        case 'create':
          break;
      }
      const row = db
        .cached(
          `INSERT INTO approvals (id, digest, status, agent_name, stage, step_type, step_name, control_id, control_name, step, timeout_ms, created_at, expires_at, counted)
           VALUES (?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
        )
        .get(
          newApprovalId(), request.digest, request.agent_name, request.stage, request.step_type, request.step_name,
          request.control_id, request.control_name, request.step_json, request.timeout_ms, now, now + request.timeout_ms, request.counted ?? null,
        ) as SqliteApprovalRow;
      this.audit(approvalAuditOf('ask', rowOf(row), request.actor), now);
      return { approval: approvalRecordOf(rowOf(row), now), outcome: 'created' as const };
    });
  }

  async useApproved(digest: string, actor: string, now: number) {
    const db = this.database;
    const latestOf = () => (db.cached('SELECT * FROM approvals WHERE digest = ? ORDER BY seq DESC LIMIT 1').get(digest) as SqliteApprovalRow | undefined) ?? null;
    const usable = (row: SqliteApprovalRow | null) => row !== null && isApprovedToUse(rowOf(row), now);
    // Read first: most steps have no approval, and a write transaction each would queue them all.
    if (!usable(db.read(latestOf))) return null;
    return db.write(() => {
      const latest = latestOf();
      if (!usable(latest)) return null;
      const row = db.cached("UPDATE approvals SET used_at = ? WHERE id = ? AND status = 'approved' AND used_at IS NULL RETURNING *").get(now, latest!.id) as SqliteApprovalRow | undefined;
      if (row === undefined) return null;
      this.audit(approvalAuditOf('use', rowOf(row), actor), now);
      return { approval: approvalRecordOf(rowOf(row), now), counted: row.counted };
    });
  }

  async giveBackApproval(id: string, usedAt: number, actor: string, now: number) {
    const db = this.database;
    return db.write(() => {
      const row = db.cached("UPDATE approvals SET used_at = NULL WHERE id = ? AND status = 'approved' AND used_at = ? RETURNING *").get(id, usedAt) as SqliteApprovalRow | undefined;
      if (row === undefined) return false;
      this.audit(approvalAuditOf('restore', rowOf(row), actor), now);
      return true;
    });
  }

  async getApproval(id: string, now: number) {
    const row = this.database.read(() => this.database.cached('SELECT * FROM approvals WHERE id = ?').get(id) as SqliteApprovalRow | undefined);
    return row === undefined ? null : approvalRecordOf(rowOf(row), now);
  }

  async listApprovals(query: ApprovalQuery, now: number) {
    const where: string[] = [];
    const params: unknown[] = [];
    // Expiry is read at `now`: a pending row past its expiry lists as expired.
    if (query.status === 'pending') {
      where.push("status = 'pending' AND expires_at > ?");
      params.push(now);
    } else if (query.status === 'expired') {
      where.push("(status = 'expired' OR (status = 'pending' AND expires_at <= ?))");
      params.push(now);
    } else if (query.status !== undefined) {
      where.push('status = ?');
      params.push(query.status);
    }
    if (query.agent_name !== undefined) {
      where.push('agent_name = ?');
      params.push(query.agent_name);
    }
    const sql = `SELECT * FROM approvals ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT ?`;
    const rows = this.database.read(() => this.database.cached(sql).all(...params, Math.max(1, query.limit)) as SqliteApprovalRow[]);
    return rows.map((r) => approvalRecordOf(rowOf(r), now));
  }

  async decideApproval(id: string, decision: ApprovalDecision, now: number): Promise<DecideOutcome> {
    const db = this.database;
    return db.write(() => {
      const row = db
        .cached("UPDATE approvals SET status = ?, decided_at = ?, decided_by = ?, reason = ? WHERE id = ? AND status = 'pending' AND expires_at > ? RETURNING *")
        .get(decision.status, now, decision.by, decision.reason, id, now) as SqliteApprovalRow | undefined;
      if (row !== undefined) {
        this.audit(approvalAuditOf(decision.status === 'approved' ? 'approve' : 'deny', rowOf(row), decision.by), now);
        return { decided: approvalRecordOf(rowOf(row), now) };
      }
      const current = db.cached('SELECT * FROM approvals WHERE id = ?').get(id) as SqliteApprovalRow | undefined;
      if (current === undefined) return null;
      return { conflict: approvalRecordOf(rowOf(current), now) };
    });
  }

  /** Inside the caller's transaction; at the store's revision (an approval changes no control). */
  private audit(entry: ApprovalAudit, now: number): void {
    this.database
      .cached(
        `INSERT INTO change_log (revision, ts, actor, source, kind, op, control_id, control_name, agent_name, before, after, note)
         VALUES ((SELECT value FROM store_revision WHERE id = 1), ?, ?, 'api', 'approval', ?, NULL, ?, ?, NULL, ?, ?)`,
      )
      .run(now, entry.actor, entry.op, entry.control_name, entry.agent_name, JSON.stringify(entry.after), entry.note);
  }
}

function rowOf(row: SqliteApprovalRow): ApprovalRow {
  let step: unknown;
  try {
    step = JSON.parse(row.step) as unknown;
  } catch {
    step = row.step;
  }
  return { ...row, step };
}
