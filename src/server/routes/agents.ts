import { isDeepStrictEqual } from 'node:util';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import {
  AgentNameSchema,
  AgentPatchSchema,
  AgentRecordSchema,
  AgentRegistrationSchema,
  ControlRecordSchema,
  matchesLabelFilter,
  parseLabelFilter,
  type AgentRecord,
  type AgentRegistration,
} from '../../model/index.js';
import { apiOrigin, controlIdOf, isWatchManaged, parseOr422, type ServerContext } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { HttpProblem, invalid, notFound } from '../problem.js';
import { readOnly } from './controls.js';

type Params = { agent_name: string };
type LinkParams = { agent_name: string; control_id: string };

/** The registration fields initAgent compares and reports on. */
const REGISTERED_FIELDS = ['agent_description', 'agent_version', 'steps', 'metadata', 'labels'] as const;

/** `POST /agents/initAgent`: the stored agent, whether it is new, and each field the registration changed. */
export const InitAgentResultSchema = z.strictObject({
  agent: AgentRecordSchema,
  created: z.boolean(),
  changes: z.array(z.strictObject({ field: z.enum(REGISTERED_FIELDS), before: z.unknown(), after: z.unknown() })),
});
export type AgentChange = z.infer<typeof InitAgentResultSchema>['changes'][number];

/** Where each control of an agent's set comes from, by control id: `link` and/or `policy:<name>`. */
const SourcesSchema = z
  .record(z.string(), z.array(z.string()))
  .describe('By control id: where the control comes from, "link" (linked to the agent) and/or "policy:<name>"');

/** `GET /agents/{agent_name}`: the record plus the ids and names of its controls (links and policies). */
export const AgentDetailSchema = AgentRecordSchema.extend({
  controls: z.array(z.strictObject({ control_id: z.number().int().positive(), name: z.string(), sources: z.array(z.string()) })),
});

/** `GET /agents?label=key=value`: every filter must hold (`key=value`, `key!=value`, or `key` present). */
export const ListAgentsQuerySchema = z.strictObject({
  include: z.literal('links').optional().describe('links: give each agent the names of the controls linked to it (not those of policies)'),
  label: z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe('A label filter: key=value, key!=value or key; repeat it to require several'),
});

/** `GET /agents/{agent_name}/controls`: what a client evaluates locally. */
export const AgentControlsSchema = z.strictObject({
  agent_name: z.string(),
  controls: z.array(ControlRecordSchema),
  set_revision: z.number().int().nonnegative().describe('The store revision the controls were read at'),
  sources: SourcesSchema,
});

const DOCS = {
  list: {
    operationId: 'listAgents',
    summary: 'List agents, optionally only those whose labels match',
    tag: 'agents',
    query: ListAgentsQuerySchema,
    responses: { 200: z.strictObject({ agents: z.array(AgentRecordSchema.extend({ links: z.array(z.string()).optional().describe('With include=links') })) }) },
  },
  init: {
    operationId: 'initAgent',
    summary: 'Register an agent (strict or overwrite); reports what changed',
    description:
      'Fields left out keep their stored values. 201 when the agent is new, 200 otherwise; 409 in strict mode when the stored agent differs, ' +
      'and 409 (errors[].code leaves_policy) when new labels would take a registered agent out of a policy that selects it now.',
    tag: 'agents',
    body: AgentRegistrationSchema,
    responses: {
      200: { description: 'The agent was registered already (changed or not)', schema: InitAgentResultSchema },
      201: { description: 'The agent is new', schema: InitAgentResultSchema },
    },
    errors: [409],
  },
  get: { operationId: 'getAgent', summary: 'An agent and the ids and names of its controls', tag: 'agents', responses: { 200: AgentDetailSchema } },
  patch: { operationId: 'updateAgent', summary: 'Update agent fields', tag: 'agents', body: AgentPatchSchema, responses: { 200: AgentRecordSchema } },
  delete: {
    operationId: 'deleteAgent',
    summary: 'Delete an agent and its links',
    description:
      'The controls it was linked to stay (their ids are listed); its history, events and recorded steps are kept, and the audit log records the delete. ' +
      '409 read_only for an agent owned by watch mode.',
    tag: 'agents',
    responses: {
      200: z.strictObject({
        deleted: z.literal(true),
        agent_name: z.string(),
        unlinked_controls: z.array(z.number().int().positive()).describe('Ids of the controls the agent was linked to'),
      }),
    },
    errors: [409],
  },
  controls: {
    operationId: 'listAgentControls',
    summary: "Full definitions of the agent's controls, linked or bound by a policy (runtime refresh)",
    description: 'Only controls that have data; disabled ones included (clients skip them). Each control appears once, however many links and policies bind it; `sources` says where it comes from.',
    tag: 'agents',
    responses: { 200: AgentControlsSchema },
  },
  link: {
    operationId: 'linkControl',
    summary: 'Link a control to the agent (idempotent)',
    tag: 'agents',
    responses: { 200: z.strictObject({ linked: z.boolean().describe('false when it was linked already') }) },
    errors: [409],
  },
  unlink: {
    operationId: 'unlinkControl',
    summary: 'Unlink a control from the agent (idempotent)',
    tag: 'agents',
    responses: { 200: z.strictObject({ unlinked: z.boolean().describe('false when it was not linked') }) },
    errors: [409],
  },
} satisfies Record<string, OperationDoc>;

/** Agents: registration, lookup, patch, and the links to controls (SPEC section 4). */
export const agentRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { store, controlSets } = ctx;

  async function existingAgent(rawName: string): Promise<AgentRecord> {
    const name = agentNameOfPath(rawName);
    const agent = await store.getAgent(name);
    if (!agent) throw notFound(`agent "${name}" is not registered; register it with POST /api/v1/agents/initAgent`);
    return agent;
  }

  app.get('/agents', { config: { access: 'read', openapi: DOCS.list } }, async (request) => {
    const query = parseOr422(ListAgentsQuerySchema, request.query, 'query');
    const texts = query.label === undefined ? [] : Array.isArray(query.label) ? query.label : [query.label];
    const filters = texts.map((text) => {
      const filter = parseLabelFilter(text);
      if (typeof filter === 'string') throw invalid('the query is not valid', [{ field: 'label', code: 'invalid_label', message: filter }]);
      return filter;
    });
    const all = await store.listAgents();
    const agents = filters.length === 0 ? all : all.filter((a) => filters.every((f) => matchesLabelFilter(f, a.labels)));
    if (query.include !== 'links') return { agents };
    // One read of every link instead of one request per agent: what a GitOps plan needs.
    const [links, controls] = await Promise.all([store.listLinks(), store.listAllControls()]);
    const names = new Map(controls.map((c) => [c.control_id, c.name]));
    const byAgent = new Map<string, string[]>();
    for (const l of links) {
      const name = names.get(l.control_id);
      if (name !== undefined) byAgent.set(l.agent_name, [...(byAgent.get(l.agent_name) ?? []), name]);
    }
    return { agents: agents.map((a) => ({ ...a, links: byAgent.get(a.agent_name) ?? [] })) };
  });

  app.post('/agents/initAgent', { config: { access: 'read', openapi: DOCS.init } }, async (request, reply) => {
    const registration = parseOr422(AgentRegistrationSchema, request.body, 'registration');
    const before = await store.getAgent(registration.agent_name);
    const changes = diffRegistration(before, registration);
    if (before && changes.length === 0) return reply.code(200).send({ agent: before, created: false, changes });
    if (before && registration.conflict_mode === 'strict') {
      throw new HttpProblem(
        409,
        'conflict',
        `agent "${registration.agent_name}" is registered differently (${changes.map((c) => c.field).join(', ')}); send conflict_mode "overwrite" to replace it`,
        changes.map((c) => ({ field: c.field, code: 'conflict', message: `stored value differs from the registration` })),
      );
    }
    const next = registeredFields(before, registration);
    // A registration is sent with any key the agent holds (a regular one), so it must not
    // be a way out of a guard: labels that take a registered agent out of a policy
    // selecting it now (dropping `pci`, adding `sandbox` to escape DoesNotExist) are
    // refused whole (409, leaves_policy). The store checks it inside the write, against
    // the policies as they are then, so a policy written meanwhile cannot slip between.
    // Labels left out are kept by the store as it reads them inside the write (not as read above).
    const { agent, created } = await store.upsertAgent(
      { agent_name: registration.agent_name, ...next, labels: registration.labels, managed_by: before?.managed_by ?? null },
      apiOrigin(ctx, request),
      { registration: true },
    );
    controlSets.invalidate([agent.agent_name]);
    return reply.code(created ? 201 : 200).send({ agent, created, changes });
  });

  app.get<{ Params: Params }>('/agents/:agent_name', { config: { access: 'read', openapi: DOCS.get } }, async (request) => {
    const agent = await existingAgent(request.params.agent_name);
    const set = await store.agentControlSet(agent.agent_name);
    const controls = set?.controls ?? [];
    return { ...agent, controls: controls.map((c) => ({ control_id: c.control_id, name: c.name, sources: [...(set?.sources.get(c.control_id) ?? ['link'])] })) };
  });

  app.patch<{ Params: Params }>('/agents/:agent_name', { config: { access: 'admin', openapi: DOCS.patch } }, async (request) => {
    const patch = parseOr422(AgentPatchSchema, request.body, 'request body');
    if (Object.values(patch).every((v) => v === undefined)) {
      throw invalid('the request body is not valid', [
        { field: '', code: 'custom', message: 'give at least one of agent_description, agent_version, steps, metadata, labels' },
      ]);
    }
    const agent = await existingAgent(request.params.agent_name);
    const patched = await store.patchAgent(agent.agent_name, patch, apiOrigin(ctx, request));
    // New labels can move the agent into or out of policies.
    controlSets.invalidate([agent.agent_name]);
    return patched;
  });

  app.delete<{ Params: Params }>('/agents/:agent_name', { config: { access: 'admin', openapi: DOCS.delete } }, async (request) => {
    const agent = await existingAgent(request.params.agent_name);
    if (isWatchManaged(agent.managed_by)) {
      throw new HttpProblem(409, 'read_only', `agent "${agent.agent_name}" is managed by ${agent.managed_by} and read-only through the API; remove it from the watched directory instead`);
    }
    const { unlinked_controls } = await store.deleteAgent(agent.agent_name, apiOrigin(ctx, request));
    controlSets.invalidate([agent.agent_name]);
    return { deleted: true, agent_name: agent.agent_name, unlinked_controls };
  });

  // What a client evaluates locally: full definitions, only controls that have data, and
  // the store revision they were read at (the SDK's events name it as set_revision).
  app.get<{ Params: Params }>('/agents/:agent_name/controls', { config: { access: 'read', openapi: DOCS.controls } }, async (request) => {
    const name = agentNameOfPath(request.params.agent_name);
    const set = await store.agentControlSet(name);
    if (!set) throw notFound(`agent "${name}" is not registered; register it with POST /api/v1/agents/initAgent`);
    const controls = set.controls.filter((c) => c.data !== null);
    const sources = Object.fromEntries(controls.map((c) => [String(c.control_id), [...(set.sources.get(c.control_id) ?? ['link'])]]));
    return { agent_name: name, controls, set_revision: set.revision, sources };
  });

  app.post<{ Params: LinkParams }>('/agents/:agent_name/controls/:control_id', { config: { access: 'admin', openapi: DOCS.link } }, async (request) => {
    const { agent, controlId } = await linkTarget(request.params);
    const linked = await store.linkControl(agent.agent_name, controlId, apiOrigin(ctx, request));
    controlSets.invalidate([agent.agent_name]);
    return { linked };
  });

  app.delete<{ Params: LinkParams }>('/agents/:agent_name/controls/:control_id', { config: { access: 'admin', openapi: DOCS.unlink } }, async (request) => {
    const { agent, controlId } = await linkTarget(request.params);
    const unlinked = await store.unlinkControl(agent.agent_name, controlId, apiOrigin(ctx, request));
    controlSets.invalidate([agent.agent_name]);
    return { unlinked };
  });

  async function linkTarget(params: LinkParams): Promise<{ agent: AgentRecord; controlId: number }> {
    const controlId = controlIdOf(params.control_id);
    const agent = await existingAgent(params.agent_name);
    const control = await store.getControl(controlId);
    if (!control) throw notFound(`no control has id ${controlId}`);
    if (isWatchManaged(control.managed_by)) throw readOnly(control);
    return { agent, controlId };
  }
};

/**
 * The agent a path names, normalised. A name the model refuses (too long, characters
 * agent names never hold) cannot name an agent: 422 naming `agent_name`, the same on both
 * stores, instead of a lookup.
 */
function agentNameOfPath(raw: string): string {
  return parseOr422(PathNameSchema, { agent_name: raw }, 'path').agent_name;
}

const PathNameSchema = z.strictObject({ agent_name: AgentNameSchema });

/** The registration applied over what is stored: a field left out keeps its stored value. */
function registeredFields(before: AgentRecord | null, registration: AgentRegistration) {
  return {
    agent_description: registration.agent_description ?? before?.agent_description ?? null,
    agent_version: registration.agent_version ?? before?.agent_version ?? null,
    steps: registration.steps ?? before?.steps ?? [],
    metadata: registration.metadata ?? before?.metadata ?? null,
    labels: registration.labels ?? before?.labels ?? {},
  };
}

/** What a registration would change in the stored agent; every given field when it is new. */
export function diffRegistration(before: AgentRecord | null, registration: AgentRegistration): AgentChange[] {
  const after = registeredFields(before, registration);
  const changes: AgentChange[] = [];
  for (const field of REGISTERED_FIELDS) {
    const old = before ? before[field] : null;
    const next = after[field];
    const empty = next === null || (Array.isArray(next) ? next.length === 0 : typeof next === 'object' && Object.keys(next).length === 0);
    const unchanged = before ? isDeepStrictEqual(old, next) : empty;
    if (!unchanged) changes.push({ field, before: old, after: next });
  }
  return changes;
}
