/** The approvals endpoints (docs/approvals.md), as `GuardClient.approvals`. */
import { z } from 'zod';
import { ApprovalRecordSchema, type ApprovalRecord, type ApprovalStatus } from '../model/index.js';
import type { Transport } from './transport.js';

const API = '/api/v1';
const enc = encodeURIComponent;
const ListSchema = z.object({ approvals: z.array(ApprovalRecordSchema) });

/** How much longer than the server's long-poll the client waits for its answer. */
const WAIT_SLACK_MS = 10_000;

/** `GuardClient.approvals`: the approvals endpoints. */
export interface ApprovalsApi {
  list(query?: { status?: ApprovalStatus; agent_name?: string; limit?: number }): Promise<ApprovalRecord[]>;
  get(id: string): Promise<ApprovalRecord>;
  /** Long-poll: the approval once decided or expired, or still pending after `timeoutMs` (the server caps it at 120 s). */
  wait(id: string, timeoutMs: number): Promise<ApprovalRecord>;
  approve(id: string, reason?: string): Promise<ApprovalRecord>;
  deny(id: string, reason?: string): Promise<ApprovalRecord>;
}

export function approvalsApiOf(transport: Transport): ApprovalsApi {
  return new ApprovalsClient(transport);
}

class ApprovalsClient implements ApprovalsApi {
  constructor(private readonly transport: Transport) {}

  async list(query: { status?: ApprovalStatus; agent_name?: string; limit?: number } = {}): Promise<ApprovalRecord[]> {
    const out = await this.transport.request({
      method: 'GET', path: `${API}/approvals`, endpoint: 'GET /approvals', schema: ListSchema,
      query: { status: query.status, agent_name: query.agent_name, limit: query.limit },
    });
    return out.approvals;
  }

  get(id: string): Promise<ApprovalRecord> {
    return this.transport.request({ method: 'GET', path: `${API}/approvals/${enc(id)}`, endpoint: 'GET /approvals/{approval_id}', schema: ApprovalRecordSchema });
  }

  /** Long-poll: the approval once decided or expired, or still pending after `timeoutMs` (the server caps it at 120 s). */
  wait(id: string, timeoutMs: number): Promise<ApprovalRecord> {
    const ms = Math.max(1, Math.min(Math.ceil(timeoutMs), 120_000));
    return this.transport.request({
      method: 'GET', path: `${API}/approvals/${enc(id)}/wait`, endpoint: 'GET /approvals/{approval_id}/wait', schema: ApprovalRecordSchema,
      query: { timeout: `${ms}ms` }, timeoutMs: ms + WAIT_SLACK_MS,
    });
  }

  approve(id: string, reason?: string): Promise<ApprovalRecord> {
    return this.#decide(id, 'approve', reason);
  }

  deny(id: string, reason?: string): Promise<ApprovalRecord> {
    return this.#decide(id, 'deny', reason);
  }

  #decide(id: string, verb: 'approve' | 'deny', reason: string | undefined): Promise<ApprovalRecord> {
    return this.transport.request({
      method: 'POST', path: `${API}/approvals/${enc(id)}/${verb}`, endpoint: `POST /approvals/{approval_id}/${verb}`, schema: ApprovalRecordSchema,
      body: reason === undefined ? {} : { reason },
    });
  }
}
