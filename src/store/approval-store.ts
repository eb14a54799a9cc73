/** The approvals concern of the Store (store/types.ts): what the server asks of both dialects. */
import type { ApprovalRecord, ApprovalStatus, Stage, StepType } from '../model/index.js';

/** A step an ask control matched, as the server submits it for approval (routes/approval-gate.ts). */
export interface ApprovalRequest {
  /** SHA-256 of the canonical (agent, stage, step type, name, input): what an approval is bound to. */
  digest: string;
  agent_name: string;
  stage: Stage;
  step_type: StepType;
  step_name: string;
  control_id: number;
  control_name: string;
  /** The step as JSON text, already masked as recorded steps are. */
  step_json: string;
  /**
   * What this submission's counting controls added (JSON text, counting/counted-already.ts),
   * kept with a new question: its approved submission adds only what it counts beyond it.
   */
  counted?: string | undefined;
  timeout_ms: number;
  /** Who submitted the step (the evaluation request's key), for the audit log. */
  actor: string;
}

/**
 * What a submission met: `created` a new question or `pending` the open one (the step
 * waits), `approved` (this submission used the approval: allowed once), `denied` or
 * `expired` (the step is denied).
 */
export type ApprovalOutcome = 'created' | 'pending' | 'approved' | 'denied' | 'expired';

/** An approval `useApproved` took, with what its question counted (ApprovalRequest.counted; null before that was kept). */
export interface UsedApproval {
  approval: ApprovalRecord;
  counted: string | null;
}

export interface ApprovalQuery {
  status?: ApprovalStatus | undefined;
  agent_name?: string | undefined;
  limit: number;
}

/** A decision on a pending approval. */
export interface ApprovalDecision {
  status: 'approved' | 'denied';
  /** Who decided: the key's class and fingerprint (auth.ts createActorOf). */
  by: string;
  reason: string | null;
}

/**
 * A decision's answer: the approval as decided, or `conflict` with the approval as it
 * already was (decided or expired); null for an unknown id.
 */
export type DecideOutcome = { decided: ApprovalRecord } | { conflict: ApprovalRecord } | null;

/**
 * Approvals of asked steps (docs/approvals.md). Shared by replicas: every method is one
 * transaction, and a submission of one digest is serialised with the others of that
 * digest, so a pending question is reused and an approval is used by exactly one
 * submission, whichever replica takes it. `now` is epoch ms. Each question asked, decision,
 * use and expiry is written to the audit log (kind `approval`) in the same transaction.
 */
export interface ApprovalStore {
  submitApproval(request: ApprovalRequest, now: number): Promise<{ approval: ApprovalRecord; outcome: ApprovalOutcome }>;
  /**
   * Uses the latest approval of `digest` when it is approved and not yet used, as a
   * submission would, and returns it; null, changing nothing, otherwise. For a step
   * submitted again on its approval, taken before the step is counted (docs/approvals.md).
   */
  useApproved(digest: string, actor: string, now: number): Promise<UsedApproval | null>;
  /**
   * Makes an approval `useApproved` took at `usedAt` unused again: the request that took it
   * failed before its step was answered. False, changing nothing, when it is not that use.
   */
  giveBackApproval(id: string, usedAt: number, actor: string, now: number): Promise<boolean>;
  getApproval(id: string, now: number): Promise<ApprovalRecord | null>;
  /** Newest first; a pending approval past its expiry lists as expired. */
  listApprovals(query: ApprovalQuery, now: number): Promise<ApprovalRecord[]>;
  decideApproval(id: string, decision: ApprovalDecision, now: number): Promise<DecideOutcome>;
}
