import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { ApprovalDecisionBodySchema, ApprovalRecordSchema, ApprovalStatusSchema, type ApprovalRecord } from '../../model/index.js';
import { parseOr422, type ServerContext } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { HttpProblem, notFound } from '../problem.js';
import { DEFAULT_PAGE_SIZE, pageLimit } from '../schemas.js';

/** Longest a `wait` long-poll holds the request (its `timeout`, default 30s). */
export const MAX_WAIT_MS = 120_000;

const ListQuerySchema = z.strictObject({
  status: ApprovalStatusSchema.optional().describe('Only approvals with this status (a pending one past its expiry is expired)'),
  agent_name: z.string().min(1).max(128).optional().describe('Only this agent’s approvals'),
  limit: pageLimit(),
});

const WaitQuerySchema = z.strictObject({
  timeout: z
    .string()
    .regex(/^[1-9][0-9]{0,5}(ms|s|m)?$/, 'timeout must be a duration such as 500ms, 30s or 2m (a bare number is seconds)')
    .describe(`How long to hold the request when nothing is decided: 500ms, 30s, 2m (default 30s, at most ${MAX_WAIT_MS / 1000}s)`)
    .optional(),
});

const ListSchema = z.strictObject({ approvals: z.array(ApprovalRecordSchema) });

const DOCS = {
  list: {
    operationId: 'listApprovals',
    summary: 'List approvals, newest first',
    tag: 'approvals',
    query: ListQuerySchema,
    responses: { 200: ListSchema },
  },
  get: {
    operationId: 'getApproval',
    summary: 'One approval: the step (masked as recorded steps are), its control, times, and who decided and why',
    tag: 'approvals',
    responses: { 200: ApprovalRecordSchema },
    errors: [404],
  },
  wait: {
    operationId: 'waitForApproval',
    summary: 'Long-poll: answers as soon as the approval is decided (or expires), else with it still pending after timeout',
    tag: 'approvals',
    query: WaitQuerySchema,
    responses: { 200: ApprovalRecordSchema },
    errors: [404],
  },
  approve: {
    operationId: 'approveApproval',
    summary: 'Approve: the next submission of exactly this step is allowed, once',
    description: 'Needs an admin key or a key from GUARD_APPROVER_API_KEYS. The body (with a reason) may be left out. 409 when already decided or expired.',
    tag: 'approvals',
    body: ApprovalDecisionBodySchema,
    bodyOptional: true,
    responses: { 200: ApprovalRecordSchema },
    errors: [404, 409],
  },
  deny: {
    operationId: 'denyApproval',
    summary: 'Deny: the step is denied with this reason',
    description: 'Needs an admin key or a key from GUARD_APPROVER_API_KEYS. 409 when already decided or expired.',
    tag: 'approvals',
    body: ApprovalDecisionBodySchema,
    bodyOptional: true,
    responses: { 200: ApprovalRecordSchema },
    errors: [404, 409],
  },
} satisfies Record<string, OperationDoc>;

/** `30s` -> 30000; a bare number is seconds. */
export function waitMsOf(text: string | undefined): number {
  if (text === undefined) return 30_000;
  const m = /^(\d+)(ms|s|m)?$/.exec(text)!;
  const n = Number(m[1]);
  const ms = m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
  return Math.min(ms, MAX_WAIT_MS);
}

/**
 * Approvals of asked steps (docs/approvals.md). Reading needs any key (regular, admin or
 * approver); deciding needs an admin or approver key.
 */
export const approvalRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { store, approvals } = ctx;
  const now = () => Date.now();

  app.get('/approvals', { config: { access: 'approvals', openapi: DOCS.list } }, async (request) => {
    const query = parseOr422(ListQuerySchema, request.query, 'query');
    return { approvals: await store.listApprovals({ status: query.status, agent_name: query.agent_name?.trim().toLowerCase(), limit: query.limit ?? DEFAULT_PAGE_SIZE }, now()) };
  });

  app.get<{ Params: { approval_id: string } }>('/approvals/:approval_id', { config: { access: 'approvals', openapi: DOCS.get } }, async (request) => {
    return (await store.getApproval(request.params.approval_id, now())) ?? unknown(request.params.approval_id);
  });

  app.get<{ Params: { approval_id: string } }>('/approvals/:approval_id/wait', { config: { access: 'approvals', openapi: DOCS.wait } }, async (request) => {
    const query = parseOr422(WaitQuerySchema, request.query, 'query');
    return (await approvals.waiters.wait(request.params.approval_id, waitMsOf(query.timeout))) ?? unknown(request.params.approval_id);
  });

  for (const [verb, status] of [['approve', 'approved'], ['deny', 'denied']] as const) {
    app.post<{ Params: { approval_id: string } }>(`/approvals/:approval_id/${verb}`, { config: { access: 'approve', openapi: DOCS[verb] } }, async (request) => {
      // A body-less POST (curl -X POST, no content type) decides without a reason.
      const body = parseOr422(ApprovalDecisionBodySchema, request.body ?? {}, 'request body');
      const id = request.params.approval_id;
      const outcome = await store.decideApproval(id, { status, by: ctx.actorOf(request), reason: body.reason ?? null }, now());
      if (outcome === null) return unknown(id);
      if ('conflict' in outcome) throw conflictOf(outcome.conflict);
      approvals.announce(status, outcome.decided);
      return outcome.decided;
    });
  }
};

function unknown(id: string): never {
  throw notFound(`no approval has id "${id.slice(0, 80)}"`);
}

function conflictOf(approval: ApprovalRecord): HttpProblem {
  const by = approval.decided_by ? ` by ${approval.decided_by}` : '';
  return new HttpProblem(409, 'conflict', `approval ${approval.id} is ${approval.status}${approval.status === 'expired' ? ` (since ${approval.expires_at})` : by}: it can no longer be decided`);
}
