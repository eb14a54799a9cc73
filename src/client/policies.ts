/**
 * The policies part of the REST client (`client.policies`): CRUD and history of
 * `/api/v1/policies`. Its own module so the client stays one readable file per concern.
 */
import { z } from 'zod';
import { ChangeEntrySchema, PolicyRecordSchema, type PolicyBody, type PolicyRecord } from '../model/index.js';
import { ResponseShapeError } from './errors.js';
import type { Transport } from './transport.js';

const API = '/api/v1';

const PolicyRecordResponse = PolicyRecordSchema.loose();
export const PolicyListSchema = z.looseObject({
  policies: z.array(PolicyRecordResponse),
  pagination: z.looseObject({ limit: z.number().int(), next_cursor: z.number().int().nullable(), has_more: z.boolean(), total: z.number().int() }),
});
export type PolicyList = z.infer<typeof PolicyListSchema>;
const PolicyDetailSchema = PolicyRecordResponse.extend({ members: z.array(z.string()) });
const DeletedPolicySchema = z.looseObject({ deleted: z.literal(true), unguarded_agents: z.array(z.string()) });
const PolicyHistorySchema = z.looseObject({
  policy_id: z.number().int(),
  entries: z.array(ChangeEntrySchema.loose()),
  pagination: z.looseObject({ next_cursor: z.number().int().nullable(), has_more: z.boolean() }),
});

/** A policy as written: its body, optionally owned (`gitops:<owner>`) and placed (`file:line`). */
export type PolicyWriteBody = PolicyBody & { managed_by?: string | null; source?: string | null };

export type PolicyDetail = z.infer<typeof PolicyDetailSchema>;
export type PolicyHistoryPage = z.infer<typeof PolicyHistorySchema>;

/** What `client.policies` offers: CRUD and history of `/api/v1/policies`. */
export interface PoliciesApi {
  list(page?: { cursor?: number | null; limit?: number; name?: string }): Promise<PolicyList>;
  /** Every policy, following `next_cursor` until the last page. */
  listAll(pageSize?: number): Promise<PolicyRecord[]>;
  get(id: number): Promise<PolicyDetail>;
  create(policy: PolicyWriteBody): Promise<PolicyRecord>;
  replace(id: number, policy: PolicyWriteBody): Promise<PolicyRecord>;
  delete(id: number): Promise<{ unguarded_agents: string[] }>;
  history(id: number, page?: { cursor?: number | null; limit?: number }): Promise<PolicyHistoryPage>;
}

export class PolicyClient implements PoliciesApi {
  constructor(private readonly transport: Transport) {}

  list(page: { cursor?: number | null; limit?: number; name?: string } = {}): Promise<PolicyList> {
    return this.transport.request({
      method: 'GET', path: `${API}/policies`, endpoint: 'GET /policies', schema: PolicyListSchema,
      query: { cursor: page.cursor ?? undefined, limit: page.limit, name: page.name },
    });
  }

  /** Every policy, following `next_cursor` until the last page. */
  async listAll(pageSize = 100): Promise<PolicyRecord[]> {
    const all: PolicyRecord[] = [];
    let cursor: number | undefined;
    for (;;) {
      const page = await this.list({ cursor, limit: pageSize });
      all.push(...page.policies);
      const next = page.pagination.next_cursor;
      if (!page.pagination.has_more || next === null) return all;
      if (next === cursor) throw new ResponseShapeError('GET /policies', this.transport.url(`${API}/policies`), `next_cursor ${next} does not advance`);
      cursor = next;
    }
  }

  get(id: number): Promise<z.infer<typeof PolicyDetailSchema>> {
    return this.transport.request({ method: 'GET', path: `${API}/policies/${id}`, endpoint: 'GET /policies/{policy_id}', schema: PolicyDetailSchema });
  }

  create(policy: PolicyWriteBody): Promise<PolicyRecord> {
    return this.transport.request({ method: 'PUT', path: `${API}/policies`, endpoint: 'PUT /policies', schema: PolicyRecordResponse, body: policy });
  }

  replace(id: number, policy: PolicyWriteBody): Promise<PolicyRecord> {
    return this.transport.request({
      method: 'PUT', path: `${API}/policies/${id}`, endpoint: 'PUT /policies/{policy_id}', schema: PolicyRecordResponse, body: policy,
    });
  }

  async delete(id: number): Promise<{ unguarded_agents: string[] }> {
    const out = await this.transport.request({
      method: 'DELETE', path: `${API}/policies/${id}`, endpoint: 'DELETE /policies/{policy_id}', schema: DeletedPolicySchema,
    });
    return { unguarded_agents: out.unguarded_agents };
  }

  history(id: number, page: { cursor?: number | null; limit?: number } = {}): Promise<z.infer<typeof PolicyHistorySchema>> {
    return this.transport.request({
      method: 'GET', path: `${API}/policies/${id}/history`, endpoint: 'GET /policies/{policy_id}/history',
      schema: PolicyHistorySchema, query: { cursor: page.cursor ?? undefined, limit: page.limit },
    });
  }
}
