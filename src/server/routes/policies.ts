import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { ChangeEntrySchema, PolicyRecordSchema, type FieldIssue, type NewPolicy, type PolicyRecord } from '../../model/index.js';
import { apiOrigin, isWatchManaged, parseOr422, type ServerContext } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { HttpProblem, notFound } from '../problem.js';
import { DEFAULT_PAGE_SIZE, ListPoliciesQuerySchema, PolicyWriteBodySchema } from '../schemas.js';
import { HistoryQuerySchema } from './history.js';
import { readOnly } from './controls.js';

/** `GET /policies`: a page, oldest first. */
export const PolicyPageSchema = z.strictObject({
  policies: z.array(PolicyRecordSchema),
  pagination: z.strictObject({
    limit: z.number().int(),
    next_cursor: z.number().int().nullable().describe('Pass as cursor for the next page; null on the last page'),
    has_more: z.boolean(),
    total: z.number().int().describe('Policies in the store (with name: 0 or 1)'),
  }),
});

/**
 * `PUT /policies`, `PUT /policies/{id}`: the saved policy, with `warnings` when its
 * selector selects no registered agent (saved all the same: agents may register later).
 */
export const PolicyWrittenSchema = PolicyRecordSchema.extend({
  warnings: z
    .array(z.strictObject({ field: z.string(), code: z.string(), message: z.string() }))
    .optional()
    .describe('selects_nothing (field agents): the selector selects no registered agent now; the policy is saved and guards agents that register later with matching labels'),
});

/** `GET /policies/{id}`: the policy and the registered agents it guards now. */
export const PolicyDetailSchema = PolicyRecordSchema.extend({ members: z.array(z.string()).describe('Registered agents the policy selects now') });

const PolicyHistorySchema = z.strictObject({
  policy_id: z.number().int().positive(),
  entries: z.array(ChangeEntrySchema),
  pagination: z.strictObject({ limit: z.number().int(), next_cursor: z.number().int().nullable(), has_more: z.boolean() }),
});

const DOCS = {
  create: {
    operationId: 'createPolicy',
    summary: 'Create a policy: controls bound to every agent its selector picks, now and later',
    description:
      '422 when a control it names does not exist or a selector is not valid label syntax. ' +
      'When the selector selects no registered agent the policy is saved and the answer carries warnings (code selects_nothing): ' +
      'a selector whose label key or value is misspelt guards nobody, and says so.',
    tag: 'policies',
    body: PolicyWriteBodySchema,
    responses: { 201: PolicyWrittenSchema },
    errors: [409],
  },
  list: { operationId: 'listPolicies', summary: 'A page of policies (cursor-based)', tag: 'policies', query: ListPoliciesQuerySchema, responses: { 200: PolicyPageSchema } },
  get: { operationId: 'getPolicy', summary: 'A policy and the agents it guards now', tag: 'policies', responses: { 200: PolicyDetailSchema } },
  replace: {
    operationId: 'replacePolicy',
    summary: 'Replace a policy whole (its members are resolved again)',
    description: 'As for create, warnings (code selects_nothing) when the new selector selects no registered agent; the policy is saved all the same.',
    tag: 'policies',
    body: PolicyWriteBodySchema,
    responses: { 200: PolicyWrittenSchema },
    errors: [409],
  },
  delete: {
    operationId: 'deletePolicy',
    summary: 'Delete a policy; the agents it guarded keep their own links',
    tag: 'policies',
    responses: { 200: z.strictObject({ deleted: z.literal(true), unguarded_agents: z.array(z.string()).describe('Agents the policy guarded') }) },
    errors: [409],
  },
  history: {
    operationId: 'getPolicyHistory',
    summary: "A policy's revisions, newest first (kept after it is deleted)",
    tag: 'history',
    query: HistoryQuerySchema,
    responses: { 200: PolicyHistorySchema },
  },
} satisfies Record<string, OperationDoc>;

type IdParams = { Params: { policy_id: string } };

/**
 * The saved policy, warned when it guards nobody: a selector that matches no registered
 * agent is legal (agents may register later) but is also what a misspelt label looks
 * like (`PCI` for `pci`, a trailing space), so the writer hears it at once. gitops
 * validate warns the same (load-policy.ts, selects_nothing).
 */
function withWarnings(policy: PolicyRecord, members: readonly string[]): PolicyRecord & { warnings?: FieldIssue[] } {
  if (members.length > 0) return policy;
  const warning = {
    field: 'agents',
    code: 'selects_nothing',
    message: `policy "${policy.name}" selects no registered agent: it guards agents that register later with matching labels; check the selector's label keys and values if you expected a match`,
  };
  return { ...policy, warnings: [warning] };
}

function policyIdOf(raw: string): number {
  if (!/^[1-9]\d{0,15}$/.test(raw)) throw notFound(`no policy has id "${raw}"`);
  return Number(raw);
}

/** Policies: CRUD and history; every write re-resolves membership and refreshes the sets it changed. */
export const policyRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { store, controlSets } = ctx;

  async function existing(id: number): Promise<PolicyRecord> {
    const policy = await store.getPolicy(id);
    if (!policy) throw notFound(`no policy has id ${id}`);
    return policy;
  }

  async function writable(id: number): Promise<PolicyRecord> {
    const policy = await existing(id);
    if (isWatchManaged(policy.managed_by)) throw readOnly(policy, 'policy');
    return policy;
  }

  /** The body, with every control it names checked: an unknown one is a 422 naming its position. */
  async function policyOf(body: unknown): Promise<NewPolicy> {
    const policy = parseOr422(PolicyWriteBodySchema, body, 'request body');
    const found = await Promise.all(policy.controls.map((name) => store.getControlByName(name)));
    const errors = policy.controls.flatMap((name, i) =>
      found[i] ? [] : [{ field: `controls[${i}]`, code: 'unknown_control', message: `no control is named "${name}"` }],
    );
    if (errors.length > 0) throw new HttpProblem(422, 'validation_failed', 'the policy names controls that do not exist', errors);
    return policy;
  }

  app.put('/policies', { config: { access: 'admin', openapi: DOCS.create } }, async (request, reply) => {
    const policy = await policyOf(request.body);
    const created = await store.createPolicy(policy, apiOrigin(ctx, request));
    const members = await store.policyMembers(created.policy_id);
    controlSets.invalidate(members);
    return reply.code(201).send(withWarnings(created, members));
  });

  app.get('/policies', { config: { access: 'read', openapi: DOCS.list } }, async (request) => {
    const query = parseOr422(ListPoliciesQuerySchema, request.query, 'query');
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    if (query.name !== undefined) {
      const policy = await store.getPolicyByName(query.name);
      const policies = policy ? [policy] : [];
      return { policies, pagination: { limit, next_cursor: null, has_more: false, total: policies.length } };
    }
    const page = await store.listPolicies({ cursor: query.cursor, limit });
    return { policies: page.policies, pagination: { limit, next_cursor: page.next_cursor, has_more: page.has_more, total: page.total } };
  });

  app.get<IdParams>('/policies/:policy_id', { config: { access: 'read', openapi: DOCS.get } }, async (request) => {
    const policy = await existing(policyIdOf(request.params.policy_id));
    return { ...policy, members: await store.policyMembers(policy.policy_id) };
  });

  app.put<IdParams>('/policies/:policy_id', { config: { access: 'admin', openapi: DOCS.replace } }, async (request) => {
    const id = policyIdOf(request.params.policy_id);
    const policy = await policyOf(request.body);
    await writable(id);
    const replaced = await store.replacePolicy(id, policy, apiOrigin(ctx, request));
    controlSets.invalidate(replaced.touched_agents);
    return withWarnings(replaced.policy, await store.policyMembers(id));
  });

  app.delete<IdParams>('/policies/:policy_id', { config: { access: 'admin', openapi: DOCS.delete } }, async (request) => {
    const id = policyIdOf(request.params.policy_id);
    await writable(id);
    const { touched_agents } = await store.deletePolicy(id, apiOrigin(ctx, request));
    controlSets.invalidate(touched_agents);
    return { deleted: true, unguarded_agents: touched_agents };
  });

  app.get<IdParams>('/policies/:policy_id/history', { config: { access: 'read', openapi: DOCS.history } }, async (request) => {
    const id = policyIdOf(request.params.policy_id);
    const query = parseOr422(HistoryQuerySchema, request.query, 'query');
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const page = await store.policyHistory(id, { cursor: query.cursor, limit });
    if (page.entries.length === 0 && query.cursor === undefined) throw notFound(`no policy has id ${id}`);
    return { policy_id: id, entries: page.entries, pagination: { limit, next_cursor: page.next_cursor, has_more: page.next_cursor !== null } };
  });
};
