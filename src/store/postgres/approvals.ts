/**
 * Approvals of asked steps in PostgreSQL (rules: approval-rules.ts), shared by replicas.
 * A submission holds a transaction-scoped advisory lock on its digest, so two replicas
 * submitting one step take turns: the second sees the first one's question. Using an
 * approval is `UPDATE ... WHERE used_at IS NULL RETURNING`, so only one submission wins
 * it even without the lock.
 */
import { newApprovalId } from '../approval-ids.js';
import { approvalAuditOf, approvalRecordOf, approvalStepOf, isApprovedToUse, type ApprovalAudit, type ApprovalRow } from '../approval-rules.js';
import type { ApprovalDecision, ApprovalQuery, ApprovalRequest, ApprovalStore, DecideOutcome } from '../types.js';
import type { PostgresDatabase, WriteTx } from './database.js';

/** pg returns BIGINT as strings and JSONB parsed. */
type PgApprovalRow = Omit<ApprovalRow, 'timeout_ms' | 'created_at' | 'expires_at' | 'decided_at' | 'used_at'> & {
  timeout_ms: string;
  created_at: string;
  expires_at: string;
  decided_at: string | null;
  used_at: string | null;
};

const num = (v: string | null) => (v === null ? null : Number(v));

function rowOf(r: PgApprovalRow): ApprovalRow {
  return {
    ...r,
    timeout_ms: Number(r.timeout_ms),
    created_at: Number(r.created_at),
    expires_at: Number(r.expires_at),
    decided_at: num(r.decided_at),
    used_at: num(r.used_at),
  };
}

export class PostgresApprovals implements ApprovalStore {
  constructor(private readonly database: PostgresDatabase) {}

  async submitApproval(request: ApprovalRequest, now: number) {
    const db = this.database;
    return db.write(async (tx) => {
      await db.rows(tx, 'SELECT pg_advisory_xact_lock(hashtext($1))', [`guardctl:approval:${request.digest}`]);
      const [latestRow] = await db.rows<PgApprovalRow>(tx, 'SELECT * FROM approvals WHERE digest = $1 ORDER BY seq DESC LIMIT 1', [request.digest]);
      const latest = latestRow === undefined ? null : rowOf(latestRow);
      switch (approvalStepOf(latest, now)) {
        case 'reuse':
          return { approval: approvalRecordOf(latest!, now), outcome: 'pending' as const };
        case 'expire': {
          const [row] = await db.rows<PgApprovalRow>(tx, "UPDATE approvals SET status = 'expired', used_at = $1 WHERE id = $2 RETURNING *", [now, latest!.id]);
          await this.audit(tx, approvalAuditOf('expire', rowOf(row!), request.actor), now);
          return { approval: approvalRecordOf(rowOf(row!), now), outcome: 'expired' as const };
        }
        case 'use': {
          const [row] = await db.rows<PgApprovalRow>(
            tx,
            "UPDATE approvals SET used_at = $1 WHERE id = $2 AND status IN ('approved', 'denied') AND used_at IS NULL RETURNING *",
            [now, latest!.id],
          );
          if (row !== undefined) await this.audit(tx, approvalAuditOf('use', rowOf(row), request.actor), now);
          if (row !== undefined) return { approval: approvalRecordOf(rowOf(row), now), outcome: row.status === 'approved' ? ('approved' as const) : ('denied' as const) };
          break;
        }
        case 'create':
          break;
      }
      const [row] = await db.rows<PgApprovalRow>(
        tx,
        `INSERT INTO approvals (id, digest, status, agent_name, stage, step_type, step_name, control_id, control_name, step, timeout_ms, created_at, expires_at, counted)
         VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13) RETURNING *`,
        [
          newApprovalId(), request.digest, request.agent_name, request.stage, request.step_type, request.step_name,
          request.control_id, request.control_name, request.step_json, request.timeout_ms, now, now + request.timeout_ms, request.counted ?? null,
        ],
      );
      await this.audit(tx, approvalAuditOf('ask', rowOf(row!), request.actor), now);
      return { approval: approvalRecordOf(rowOf(row!), now), outcome: 'created' as const };
    });
  }

  async useApproved(digest: string, actor: string, now: number) {
    const db = this.database;
    // Read first: most steps have no approval, and need no transaction.
    const [latest] = await db.query<PgApprovalRow>('SELECT * FROM approvals WHERE digest = $1 ORDER BY seq DESC LIMIT 1', [digest]);
    if (latest === undefined || !isApprovedToUse(rowOf(latest), now)) return null;
    // An unused approval is never followed by a newer one of its digest (a submission
    // uses it instead), so the guard on used_at is all that keeps it to one use.
    return db.write(async (tx) => {
      const [row] = await db.rows<PgApprovalRow>(
        tx,
        "UPDATE approvals SET used_at = $1 WHERE id = $2 AND status = 'approved' AND used_at IS NULL RETURNING *",
        [now, latest.id],
      );
      if (row === undefined) return null;
      await this.audit(tx, approvalAuditOf('use', rowOf(row), actor), now);
      return { approval: approvalRecordOf(rowOf(row), now), counted: row.counted };
    });
  }

  async giveBackApproval(id: string, usedAt: number, actor: string, now: number) {
    const db = this.database;
    return db.write(async (tx) => {
      const [row] = await db.rows<PgApprovalRow>(tx, "UPDATE approvals SET used_at = NULL WHERE id = $1 AND status = 'approved' AND used_at = $2 RETURNING *", [id, usedAt]);
      if (row === undefined) return false;
      await this.audit(tx, approvalAuditOf('restore', rowOf(row), actor), now);
      return true;
    });
  }

  async getApproval(id: string, now: number) {
    const [row] = await this.database.query<PgApprovalRow>('SELECT * FROM approvals WHERE id = $1', [id]);
    return row === undefined ? null : approvalRecordOf(rowOf(row), now);
  }

  async listApprovals(query: ApprovalQuery, now: number) {
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.status === 'pending') {
      params.push(now);
      where.push(`status = 'pending' AND expires_at > $${params.length}`);
    } else if (query.status === 'expired') {
      params.push(now);
      where.push(`(status = 'expired' OR (status = 'pending' AND expires_at <= $${params.length}))`);
    } else if (query.status !== undefined) {
      params.push(query.status);
      where.push(`status = $${params.length}`);
    }
    if (query.agent_name !== undefined) {
      params.push(query.agent_name);
      where.push(`agent_name = $${params.length}`);
    }
    params.push(Math.max(1, query.limit));
    const rows = await this.database.query<PgApprovalRow>(
      `SELECT * FROM approvals ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT $${params.length}`,
      params,
    );
    return rows.map((r) => approvalRecordOf(rowOf(r), now));
  }

  async decideApproval(id: string, decision: ApprovalDecision, now: number): Promise<DecideOutcome> {
    const db = this.database;
    const row = await db.write(async (tx) => {
      const [decided] = await db.rows<PgApprovalRow>(
        tx,
        "UPDATE approvals SET status = $1, decided_at = $2, decided_by = $3, reason = $4 WHERE id = $5 AND status = 'pending' AND expires_at > $2 RETURNING *",
        [decision.status, now, decision.by, decision.reason, id],
      );
      if (decided !== undefined) await this.audit(tx, approvalAuditOf(decision.status === 'approved' ? 'approve' : 'deny', rowOf(decided), decision.by), now);
      return decided;
    });
    if (row !== undefined) return { decided: approvalRecordOf(rowOf(row), now) };
    const current = await this.getApproval(id, now);
    return current === null ? null : { conflict: current };
  }

  /** Inside the caller's transaction; at the store's revision (an approval changes no control, so nothing is notified). */
  private async audit(tx: WriteTx, entry: ApprovalAudit, now: number): Promise<void> {
    await this.database.rows(
      tx,
      `INSERT INTO change_log (revision, ts, actor, source, kind, op, control_id, control_name, agent_name, before, after, note)
       VALUES ((SELECT value FROM store_revision WHERE id = 1), to_timestamp($1::double precision / 1000), $2, 'api', 'approval', $3, NULL, $4, $5, NULL, $6::jsonb, $7)`,
      [now, entry.actor, entry.op, entry.control_name, entry.agent_name, JSON.stringify(entry.after), entry.note],
    );
  }
}
