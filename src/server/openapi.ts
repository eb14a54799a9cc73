/**
 * The OpenAPI 3.1 document of the REST API, generated from the same zod schemas the
 * server validates with (z.toJSONSchema into components.schemas) plus a route table.
 * A test checks that every registered route appears here, so the two cannot drift.
 */
import { z } from 'zod';
import {
  AgentPatchSchema,
  AgentRecordSchema,
  AgentRegistrationSchema,
  ChangeEntrySchema,
  ConditionSchema,
  ControlDataSchema,
  ControlRecordSchema,
  EvaluationRequestSchema,
  EvaluationResultSchema,
  ShadowReportSchema,
} from '../model/index.js';
import type { Access } from './auth.js';
import {
  ChangesBodySchema,
  ControlDataBodySchema,
  ControlPatchBodySchema,
  CreateControlBodySchema,
} from './schemas.js';
import { RestoreBodySchema } from './routes/history.js';

interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI path syntax (`{control_id}`). */
  path: string;
  summary: string;
  access: Access;
  body?: string;
  response?: string;
  /** The success status when it is not 200. */
  status?: number;
  query?: Array<{ name: string; type: 'integer' | 'string'; description: string }>;
}

const SCHEMAS: Record<string, z.ZodType> = {
  Condition: ConditionSchema,
  ControlData: ControlDataSchema,
  ControlRecord: ControlRecordSchema,
  CreateControlBody: CreateControlBodySchema,
  ControlPatchBody: ControlPatchBodySchema,
  ControlDataBody: ControlDataBodySchema,
  ChangesBody: ChangesBodySchema,
  AgentRegistration: AgentRegistrationSchema,
  AgentPatch: AgentPatchSchema,
  AgentRecord: AgentRecordSchema,
  EvaluationRequest: EvaluationRequestSchema,
  EvaluationResult: EvaluationResultSchema,
  ChangeEntry: ChangeEntrySchema,
  RestoreBody: RestoreBodySchema,
  ShadowReport: ShadowReportSchema,
};

/** Every route the server registers, with the access level auth.ts enforces. */
export const ROUTES: readonly RouteDoc[] = [
  { method: 'get', path: '/health', summary: 'Liveness and server version', access: 'public' },
  { method: 'get', path: '/metrics', summary: 'Prometheus metrics (text format)', access: 'public' },
  { method: 'get', path: '/openapi.json', summary: 'This document', access: 'public' },
  { method: 'get', path: '/api/v1/evaluators', summary: 'Available evaluators and their config schemas', access: 'read' },
  { method: 'get', path: '/api/v1/agents', summary: 'List agents', access: 'read' },
  { method: 'post', path: '/api/v1/agents/initAgent', summary: 'Register an agent (strict or overwrite); reports what changed', access: 'read', body: 'AgentRegistration' },
  { method: 'get', path: '/api/v1/agents/{agent_name}', summary: 'An agent and the ids and names of its controls', access: 'read', response: 'AgentRecord' },
  { method: 'patch', path: '/api/v1/agents/{agent_name}', summary: 'Update agent fields', access: 'admin', body: 'AgentPatch', response: 'AgentRecord' },
  { method: 'get', path: '/api/v1/agents/{agent_name}/controls', summary: 'Full definitions of the controls linked to the agent (runtime refresh)', access: 'read' },
  { method: 'post', path: '/api/v1/agents/{agent_name}/controls/{control_id}', summary: 'Link a control to the agent (idempotent)', access: 'admin' },
  { method: 'delete', path: '/api/v1/agents/{agent_name}/controls/{control_id}', summary: 'Unlink a control from the agent (idempotent)', access: 'admin' },
  { method: 'put', path: '/api/v1/controls', summary: 'Create a control, optionally with its data', access: 'admin', body: 'CreateControlBody', response: 'ControlRecord', status: 201 },
  {
    method: 'get', path: '/api/v1/controls', summary: 'A page of controls (cursor-based)', access: 'read',
    query: [
      { name: 'cursor', type: 'integer', description: 'next_cursor of the previous page' },
      { name: 'limit', type: 'integer', description: 'page size, 1..100, default 20' },
      { name: 'name', type: 'string', description: 'exact name lookup' },
    ],
  },
  { method: 'post', path: '/api/v1/controls/validate', summary: 'Validate control data without saving', access: 'read', body: 'ControlDataBody' },
  { method: 'get', path: '/api/v1/controls/{control_id}', summary: 'A control', access: 'read', response: 'ControlRecord' },
  { method: 'patch', path: '/api/v1/controls/{control_id}', summary: 'Rename, enable or disable a control', access: 'admin', body: 'ControlPatchBody', response: 'ControlRecord' },
  { method: 'delete', path: '/api/v1/controls/{control_id}', summary: 'Delete a control and unlink it from every agent', access: 'admin' },
  { method: 'get', path: '/api/v1/controls/{control_id}/data', summary: 'The control data', access: 'read' },
  { method: 'put', path: '/api/v1/controls/{control_id}/data', summary: 'Replace the control data', access: 'admin', body: 'ControlDataBody' },
  {
    method: 'get', path: '/api/v1/controls/{control_id}/history', summary: 'The control’s revisions, newest first (ChangeEntry items; kept after it is deleted; cursor-based)', access: 'read',
    query: [
      { name: 'cursor', type: 'integer', description: 'next_cursor of the previous page' },
      { name: 'limit', type: 'integer', description: 'page size, 1..100, default 20' },
    ],
  },
  { method: 'post', path: '/api/v1/controls/{control_id}/restore', summary: 'Put a hand-managed control back as it was at a revision (409 for controls managed by apply or watch)', access: 'admin', body: 'RestoreBody' },
  {
    method: 'get', path: '/api/v1/audit', summary: 'Every write to controls, agents and links, newest first (ChangeEntry items; cursor-based)', access: 'admin',
    query: [
      { name: 'since', type: 'string', description: 'ISO time or a duration back from now (30m, 24h, 7d)' },
      { name: 'actor', type: 'string', description: 'only this actor (admin:<fingerprint>, watch:<dir>, ...)' },
      { name: 'cursor', type: 'integer', description: 'next_cursor of the previous page' },
      { name: 'limit', type: 'integer', description: 'page size, 1..100, default 20' },
    ],
  },
  {
    method: 'get', path: '/api/v1/shadow-report', summary: 'Each control in shadow mode: steps evaluated, would-deny, would-steer, masked example steps', access: 'read', response: 'ShadowReport',
    query: [
      { name: 'since', type: 'string', description: 'ISO time or a duration back from now (default 24h)' },
      { name: 'agent_name', type: 'string', description: 'only this agent’s controls and steps' },
    ],
  },
  { method: 'post', path: '/api/v1/changes', summary: 'Apply 1 to 500 changes (controls, agents, links) in one transaction, all or none', access: 'admin', body: 'ChangesBody' },
  { method: 'post', path: '/api/v1/evaluation', summary: 'Evaluate a step against the agent’s controls', access: 'read', body: 'EvaluationRequest', response: 'EvaluationResult' },
  {
    method: 'get', path: '/api/v1/recordings', summary: 'Recorded steps for replay, oldest first (GUARD_RECORD_STEPS; cursor-based)', access: 'read',
    query: [
      { name: 'agent_name', type: 'string', description: 'only this agent' },
      { name: 'since', type: 'string', description: 'ISO time; only steps recorded at or after it' },
      { name: 'limit', type: 'integer', description: 'page size, 1..1000, default 100' },
      { name: 'cursor', type: 'integer', description: 'next_cursor of the previous page' },
    ],
  },
  { method: 'get', path: '/api/v1/reload/status', summary: 'Watch mode: the watched directory’s state (last good revision, current errors); 404 when not watching', access: 'read' },
  { method: 'post', path: '/api/v1/observability/events', summary: 'Record events (1 to 1000)', access: 'read', status: 202 },
  { method: 'post', path: '/api/v1/observability/events/query', summary: 'Query stored events', access: 'read' },
  { method: 'get', path: '/api/v1/observability/events/stream', summary: 'Live evaluations (Server-Sent Events)', access: 'read' },
  { method: 'get', path: '/api/v1/observability/stats', summary: 'Statistics per control for an agent', access: 'read' },
  { method: 'get', path: '/api/v1/observability/stats/controls/{control_id}', summary: 'Statistics for one control', access: 'read' },
];

const PROBLEM = {
  type: 'object',
  required: ['type', 'title', 'status', 'detail', 'error_code'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    error_code: { type: 'string' },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['field', 'code', 'message'],
        properties: { field: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
};

function componentSchemas(): Record<string, unknown> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(SCHEMAS)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    io: 'input',
    unrepresentable: 'any',
    uri: (id) => `#/components/schemas/${id}`,
  });
  // Each entry is a standalone JSON Schema; inside OpenAPI they are plain components.
  const out: Record<string, unknown> = {};
  for (const [id, schema] of Object.entries(schemas)) {
    const { $schema: _s, $id: _i, ...rest } = schema as Record<string, unknown>;
    out[id] = rest;
  }
  return out;
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

export function buildOpenApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    const parameters = [
      ...[...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
        name: m[1],
        in: 'path',
        required: true,
        schema: m[1] === 'control_id' ? { type: 'integer', minimum: 1 } : { type: 'string' },
      })),
      ...(route.query ?? []).map((q) => ({ name: q.name, in: 'query', required: false, description: q.description, schema: { type: q.type } })),
    ];
    const success = route.response ? { 'application/json': { schema: ref(route.response) } } : { 'application/json': { schema: { type: 'object' } } };
    const operation: Record<string, unknown> = {
      summary: route.summary,
      'x-access': route.access,
      security: route.access === 'public' ? [] : [{ ApiKey: [] }],
      responses: {
        [String(route.status ?? 200)]: { description: 'success', content: success },
        default: { description: 'error', content: { 'application/problem+json': { schema: ref('Problem') } } },
      },
    };
    if (parameters.length > 0) operation.parameters = parameters;
    if (route.body) {
      operation.requestBody = { required: true, content: { 'application/json': { schema: ref(route.body) } } };
    }
    (paths[route.path] ??= {})[route.method] = operation;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'guardctl control server', version },
    paths,
    components: {
      schemas: { ...componentSchemas(), Problem: PROBLEM },
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
    },
  };
}
