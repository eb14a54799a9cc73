/**
 * PURE: what a submission of an asked step does with the latest approval of its digest,
 * shared by both dialects (sqlite/approvals.ts, postgres/approvals.ts), and the stored row
 * as the API shows it. Times are epoch milliseconds throughout.
 *
 * - pending, before expires_at: the same question (no new approval);
 * - pending, past expires_at: marked expired, and this submission is denied;
 * - approved, not yet used: used by this submission (allowed once), then asked again;
 * - denied, not yet used: this submission is denied with the approver's reason;
 * - anything else (used, expired, or decided longer ago than the timeout): a new question.
 */
import type { ApprovalRecord, ApprovalStatus, Stage, StepType } from '../model/index.js';

/** An approval as both dialects store it (times in epoch ms; the step as JSON text or parsed). */
export interface ApprovalRow {
  id: string;
  digest: string;
  status: ApprovalStatus;
  agent_name: string;
  stage: Stage;
  step_type: StepType;
  step_name: string;
  control_id: number;
  control_name: string;
  step: unknown;
  timeout_ms: number;
  created_at: number;
  expires_at: number;
  decided_at: number | null;
  decided_by: string | null;
  reason: string | null;
  used_at: number | null;
  /** What the question's counting controls added (ApprovalRequest.counted); null on rows older than it. */
  counted: string | null;
}

export type ApprovalStep = 'reuse' | 'expire' | 'use' | 'create';

export function approvalStepOf(latest: ApprovalRow | null, now: number): ApprovalStep {
  if (latest === null) return 'create';
  switch (latest.status) {
    case 'pending':
      return latest.expires_at > now ? 'reuse' : 'expire';
    case 'approved':
    case 'denied':
      // A decision answers one submission, made within a timeout of it: an approval given
      // today does not let the step through next month.
      return latest.used_at === null && latest.decided_at !== null && now < latest.decided_at + latest.timeout_ms ? 'use' : 'create';
    case 'expired':
      return 'create';
  }
}

/** An approval a submission would use now to let its step through (an unused approval, not a denial). */
export function isApprovedToUse(latest: ApprovalRow | null, now: number): boolean {
  return latest !== null && latest.status === 'approved' && approvalStepOf(latest, now) === 'use';
}

/** The status as read at `now`: a pending approval past its expiry reads as expired before anything marks it. */
export function statusAt(row: Pick<ApprovalRow, 'status' | 'expires_at'>, now: number): ApprovalStatus {
  return row.status === 'pending' && row.expires_at <= now ? 'expired' : row.status;
}

/** The audit entry of something that happened to an approval (kind `approval`, no control id: it changes no control). */
export interface ApprovalAudit {
  op: 'ask' | 'approve' | 'deny' | 'use' | 'expire' | 'restore';
  actor: string;
  control_name: string;
  agent_name: string;
  after: { id: string; status: ApprovalStatus; stage: Stage; step_name: string };
  note: string | null;
}

export function approvalAuditOf(op: ApprovalAudit['op'], row: ApprovalRow, actor: string): ApprovalAudit {
  return {
    op,
    actor,
    control_name: row.control_name,
    agent_name: row.agent_name,
    after: { id: row.id, status: row.status, stage: row.stage, step_name: row.step_name },
    note: op === 'approve' || op === 'deny' ? row.reason : op === 'restore' ? 'unused again: the request that used it failed' : null,
  };
}

export function approvalRecordOf(row: ApprovalRow, now: number): ApprovalRecord {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: row.id,
    status: statusAt(row, now),
    agent_name: row.agent_name,
    stage: row.stage,
    step_type: row.step_type,
    step_name: row.step_name,
    control_id: row.control_id,
    control_name: row.control_name,
    step: row.step,
    created_at: new Date(row.created_at).toISOString(),
    expires_at: new Date(row.expires_at).toISOString(),
    decided_at: iso(row.decided_at),
    decided_by: row.decided_by,
    reason: row.reason,
    used_at: iso(row.used_at),
  };
}
