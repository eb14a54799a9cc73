import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { ChangeEntrySchema, PolicyRecordSchema, bindsOnlyDisabledMessage, type FieldIssue, type NewPolicy, type PolicyRecord } from '../../model/index.js';
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

/** Why a saved policy guards nobody now; the policy is saved all the same. */
export const PolicyWarningsSchema = z
  .array(z.strictObject({ field: z.string(), code: z.string(), message: z.string() }))
  .optional()
  .describe(
    'selects_nothing (field agents): the selector selects no registered agent now; the policy guards agents that register later with matching labels. ' +
      'binds_only_disabled (field controls): every control the policy binds is disabled, so it guards nothing until one is enabled',
  );

/**
 * `PUT /policies`, `PUT /policies/{id}`: the saved policy, with `warnings` when it guards
 * nobody now (saved all the same: agents may register later, controls may be enabled).
 */
export const PolicyWrittenSchema = PolicyRecordSchema.extend({ warnings: PolicyWarningsSchema });

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
      'When the selector selects no registered agent, or every control it binds is disabled, the policy is saved and the answer carries ' +
      'warnings (codes selects_nothing, binds_only_disabled): a selector whose label key or value is misspelt guards nobody, and says so.',
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
    description: 'As for create, warnings (selects_nothing, binds_only_disabled) when the policy guards nobody now; it is saved all the same.',
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
 * like (`PCI` for `pci`, a trailing space), and a policy whose controls are all disabled
 * guards nothing; the writer hears either at once. gitops validate warns the same
 * (load-policy.ts).
 */
export function withWarnings<P extends PolicyRecord>(policy: P, members: readonly string[], controlsEnabled: readonly boolean[]): P & { warnings?: FieldIssue[] } {
  const warnings = policyWarnings(policy.name, members, controlsEnabled, '');
  return warnings.length === 0 ? policy : { ...policy, warnings };
}

/** Why a saved policy guards nobody now; `at` prefixes the fields (a change's path in a batch). */
export function policyWarnings(name: string, members: readonly string[], controlsEnabled: readonly boolean[], at: string): FieldIssue[] {
  const warnings: FieldIssue[] = [];
  if (members.length === 0) {
    warnings.push({
      field: `${at}agents`,
      code: 'selects_nothing',
      message: `policy "${name}" selects no registered agent: it guards agents that register later with matching labels; check the selector's label keys and values if you expected a match`,
    });
  }
  if (controlsEnabled.length > 0 && controlsEnabled.every((enabled) => !enabled)) {
    warnings.push({ field: `${at}controls`, code: 'binds_only_disabled', message: bindsOnlyDisabledMessage(name) });
  }
  return warnings;
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

  /** The body, with every control it names checked (an unknown one is a 422 naming its position), and whether each is enabled. */
  async function policyOf(body: unknown): Promise<{ policy: NewPolicy; controlsEnabled: boolean[] }> {
    const policy = parseOr422(PolicyWriteBodySchema, body, 'request body');
    const found = await Promise.all(policy.controls.map((name) => store.getControlByName(name)));
    const errors = policy.controls.flatMap((name, i) =>
      found[i] ? [] : [{ field: `controls[${i}]`, code: 'unknown_control', message: `no control is named "${name}"` }],
    );
    if (errors.length > 0) throw new HttpProblem(422, 'validation_failed', 'the policy names controls that do not exist', errors);
    return { policy, controlsEnabled: found.map((control) => control!.enabled) };
  }

  app.put('/policies', { config: { access: 'admin', openapi: DOCS.create } }, async (request, reply) => {
    const { policy, controlsEnabled } = await policyOf(request.body);
    const created = await store.createPolicy(policy, apiOrigin(ctx, request));
    const members = await store.policyMembers(created.policy_id);
    controlSets.invalidate(members);
    return reply.code(201).send(withWarnings(created, members, controlsEnabled));
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
    const { policy, controlsEnabled } = await policyOf(request.body);
    await writable(id);
    const replaced = await store.replacePolicy(id, policy, apiOrigin(ctx, request));
    controlSets.invalidate(replaced.touched_agents);
    return withWarnings(replaced.policy, await store.policyMembers(id), controlsEnabled);
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
