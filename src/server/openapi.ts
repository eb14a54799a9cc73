/**
 * The OpenAPI 3.1 document of the REST API (`GET /openapi.json`). Every route declares its
 * own entry next to its handler (`config.openapi`: an OperationDoc holding the zod schemas
 * it reads and answers with); the document is built from the routes the app registered,
 * so a route and its entry cannot drift apart, and the schemas are the ones the server
 * validates with (see openapi-components.ts for how they become components).
 */
import type { z } from 'zod';
import {
  AgentRecordSchema,
  ApprovalRecordSchema,
  PolicyRecordSchema,
  McpServerRecordSchema,
  ChangeEntrySchema,
  ConditionSchema,
  ControlDataSchema,
  ControlMatchSchema,
  ControlRecordSchema,
  AgentPatchSchema,
  AgentRegistrationSchema,
  EvaluationRequestSchema,
  EvaluationResultSchema,
  ObservabilityEventSchema,
  ShadowReportSchema,
  StepSchemaDeclSchema,
} from '../model/index.js';
import type { Access } from './auth.js';
import { ComponentSchemas, inlineSchema, type JsonSchema } from './openapi-components.js';
import { ProblemSchema } from './problem.js';
import { ControlDataBodySchema } from './schemas.js';

/** The groups operations are listed under. */
export const TAGS = {
  system: 'Health, metrics, the evaluator list and this document',
  agents: 'Agent registration and the links between agents and controls',
  controls: 'Controls and their data',
  policies: 'Controls bound to every agent a name or label selector picks, including agents that register later',
  history: 'Revisions of controls, restoring one, and the audit log of every write',
  changes: 'Many writes in one transaction (what guardctl apply sends)',
  evaluation: 'Checking a step against the agent’s controls',
  observability: 'Events, statistics, the live stream and the shadow report',
  recordings: 'Evaluated steps recorded for replay',
  reload: 'Watch mode (guardctl serve --watch)',
  mcp: 'MCP servers pinned in git: the tools a gateway lists and forwards (docs/integrations.md)',
  approvals: 'Steps an ask control holds until a person approves or denies them (docs/approvals.md)',
} as const;
export type Tag = keyof typeof TAGS;

/** One success answer: a JSON body (a zod schema), or another media type with a plain schema. */
export type ResponseDoc =
  | z.ZodType
  | { description: string; schema: z.ZodType }
  | { description: string; mediaType: string; jsonSchema: JsonSchema };

/** A problem status a route answers with; the ones every route of its kind has are added by `errorStatuses`. */
export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 503;

/** What a route tells the OpenAPI document about itself. */
export interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  tag: Tag;
  /** The JSON request body, as the client sends it. */
  body?: z.ZodType;
  /** The body may be left out (default: required). */
  bodyOptional?: true;
  /** The query string (a zod object; each key is one parameter). */
  query?: z.ZodType;
  /** Success answers by status. */
  responses: Partial<Record<200 | 201 | 202, ResponseDoc>>;
  /** Problem statuses beyond the ones its access, body, query and path imply (see errorStatuses). */
  errors?: readonly ErrorStatus[];
  /** It never reads the database, so it never answers 503 for an unavailable one. */
  storeless?: true;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's entry in the OpenAPI document (openapi.ts). */
    openapi?: OperationDoc;
  }
}

/** A registered route as the document sees it. */
export interface DocumentedRoute {
  method: string;
  /** Fastify's path syntax (`:control_id`). */
  url: string;
  access: Access;
  openapi?: OperationDoc | undefined;
}

/** Models clients meet in many places: named after the model, never after an operation. */
const MODELS: ReadonlyArray<[string, z.ZodType]> = [
  ['Problem', ProblemSchema],
  ['Condition', ConditionSchema],
  ['ControlData', ControlDataSchema],
  ['ControlRecord', ControlRecordSchema],
  ['AgentRecord', AgentRecordSchema],
  ['PolicyRecord', PolicyRecordSchema],
  ['McpServerRecord', McpServerRecordSchema],
  ['StepDecl', StepSchemaDeclSchema],
  ['ChangeEntry', ChangeEntrySchema],
  ['ControlMatch', ControlMatchSchema],
  ['AgentRegistration', AgentRegistrationSchema],
  ['AgentPatch', AgentPatchSchema],
  ['EvaluationRequest', EvaluationRequestSchema],
  ['ControlDataBody', ControlDataBodySchema],
  ['EvaluationResult', EvaluationResultSchema],
  ['ObservabilityEvent', ObservabilityEventSchema],
  ['ShadowReport', ShadowReportSchema],
  ['Approval', ApprovalRecordSchema],
];

/** Path parameters by name: every route spells them alike. */
const PATH_PARAMETERS: Record<string, { description: string; schema: JsonSchema }> = {
  agent_name: { description: 'The agent’s name (matched case-insensitively: names are stored lowercase)', schema: { type: 'string', minLength: 1, maxLength: 128 } },
  control_id: { description: 'The control’s id (anything but a positive integer answers 404)', schema: { type: 'integer', minimum: 1 } },
  session_id: { description: 'The session’s id, as steps send it in session_id (percent-encoded)', schema: { type: 'string', minLength: 1, maxLength: 128 } },
  approval_id: { description: 'The approval’s id (apr_ and 24 hex digits)', schema: { type: 'string', minLength: 1, maxLength: 64 } },
  policy_id: { description: 'The policy’s id (anything but a positive integer answers 404)', schema: { type: 'integer', minimum: 1 } },
  name: { description: 'The pinned MCP server’s name, as in its kind: McpServer document and --mcp-server-name (percent-encoded)', schema: { type: 'string', minLength: 1, maxLength: 128 } },
};

/** The shared problem answers, one per status, in `components.responses`. */
const PROBLEM_RESPONSES: Record<ErrorStatus, [name: string, description: string]> = {
  400: ['BadRequest', 'The body is not JSON (malformed_json) or not UTF-8 (invalid_utf8); or the request has no Host header, or two (bad_request)'],
  401: ['Unauthorized', 'Authentication is on and the X-API-Key header is missing or holds an unknown key (unauthorized)'],
  403: ['Forbidden', 'The Host header names a host not in GUARD_ALLOWED_HOSTS (host_not_allowed, any route); Origin or Sec-Fetch-Site say the request is cross-site (cross_site, every route but /health and /metrics); or the operation needs an admin key (forbidden)'],
  404: ['NotFound', 'No such agent, control, revision or resource (not_found)'],
  409: ['Conflict', 'The write conflicts with what is stored (conflict), or the control is managed by GitOps or watch mode (read_only)'],
  413: ['PayloadTooLarge', 'The body is larger than GUARD_BODY_LIMIT_BYTES (payload_too_large)'],
  415: ['UnsupportedMediaType', 'A write (POST, PUT, PATCH, DELETE) whose body, or content type, is not application/json in UTF-8 (unsupported_media_type). A write without a body needs no content type'],
  422: ['ValidationFailed', 'The body or query string is not valid; errors[] names each field (validation_failed)'],
  429: ['TooManyRequests', 'Too many missing or unknown keys from this address (GUARD_AUTH_MAX_FAILURES a minute): every request needing a key is refused until Retry-After seconds pass (too_many_requests)'],
  503: ['Unavailable', 'The database, or another resource the operation needs, is unavailable; try again shortly (unavailable)'],
};

/** The problem statuses of a route: its own plus those its access, body, query and path imply. */
export function errorStatuses(route: DocumentedRoute, doc: OperationDoc): ErrorStatus[] {
  // Every route checks the Host header (cross-site.ts): 400 without one, 403 for one not allowed.
  const statuses = new Set<ErrorStatus>([...(doc.errors ?? []), 400, 403]);
  if (route.access !== 'public') {
    statuses.add(401);
    statuses.add(429);
    if (!doc.storeless) statuses.add(503);
  }
  if (route.access === 'admin' || route.access === 'approve') statuses.add(403);
  // A write that names a content type, or sends a body, must say JSON (json-body.ts requireJsonWrites).
  if (WRITE_METHODS.has(route.method.toUpperCase())) statuses.add(415);
  if (doc.body) for (const s of [400, 413, 415, 422] as const) statuses.add(s);
  if (doc.query) statuses.add(422);
  if (route.url.includes(':')) statuses.add(404);
  return [...statuses].sort((a, b) => a - b);
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const REASONS: Record<number, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted' };

/** `:name` path segments as OpenAPI `{name}` templates. */
export function openApiPath(url: string): string {
  return url.replace(/:(\w+)/g, '{$1}');
}

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Builds the document from the app's registered routes; routes without an entry are left out. */
export function buildOpenApiDocument(routes: readonly DocumentedRoute[], version: string): Record<string, unknown> {
  const components = new ComponentSchemas();
  for (const [name, schema] of MODELS) components.name(schema, name);
  const paths: Record<string, Record<string, unknown>> = {};
  const used = new Set<ErrorStatus>();

  for (const route of routes) {
    const doc = route.openapi;
    if (!doc) continue;
    const Op = capitalised(doc.operationId);
    const parameters = [...pathParameters(route.url), ...queryParameters(doc.query)];
    const responses: Record<string, unknown> = {};
    const [firstStatus] = Object.keys(doc.responses);
    for (const [status, response] of Object.entries<ResponseDoc>(doc.responses)) {
      // A second success status with a schema of its own gets the status in its name.
      const suffix = status === firstStatus ? '' : status;
      responses[status] = successResponse(response, REASONS[Number(status)] ?? 'Success', (schema) =>
        components.ref(schema, 'output', `${Op}Response${suffix}`),
      );
    }
    for (const status of errorStatuses(route, doc)) {
      used.add(status);
      responses[String(status)] = { $ref: `#/components/responses/${PROBLEM_RESPONSES[status][0]}` };
    }
    responses.default = { $ref: '#/components/responses/InternalError' };

    const operation: Record<string, unknown> = {
      operationId: doc.operationId,
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      tags: [doc.tag],
      'x-access': route.access,
      ...(route.access === 'public' ? { security: [] } : {}),
      ...(parameters.length > 0 ? { parameters } : {}),
    };
    if (doc.body) {
      operation.requestBody = {
        required: !doc.bodyOptional,
        content: { 'application/json': { schema: components.ref(doc.body, 'input', `${Op}Request`) } },
      };
    }
    operation.responses = responses;
    (paths[openApiPath(route.url)] ??= {})[route.method.toLowerCase()] = operation;
  }

  const problemRef = components.ref(ProblemSchema, 'output', 'Problem');
  const problemResponses: Record<string, unknown> = {};
  for (const status of [...used].sort((a, b) => a - b)) {
    const [name, description] = PROBLEM_RESPONSES[status];
    problemResponses[name] = problemResponse(description, problemRef);
  }
  if (problemResponses.TooManyRequests) {
    (problemResponses.TooManyRequests as Record<string, unknown>).headers = {
      'Retry-After': { description: 'Seconds until the address may try again', schema: { type: 'integer', minimum: 0 } },
    };
  }
  problemResponses.InternalError = problemResponse(
    'Any other problem: an unexpected failure (500 internal; details go to the server log only), or a request refused ' +
      'before it reaches a route (408 request_timeout, 414 uri_too_long, 431 headers_too_large, 400 bad_request)',
    problemRef,
  );

  const { schemas, resolve } = components.build();
  return resolve({
    openapi: '3.1.0',
    info: {
      title: 'guardctl control server',
      version,
      description:
        'Controls for AI agent steps: store controls, link them to agents, evaluate steps, record what happened. ' +
        'Every error is an application/problem+json body (RFC 9457) with a machine-readable error_code.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/', description: 'The server that serves this document' }],
    security: [{ ApiKey: [] }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas,
      responses: problemResponses,
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description:
            'Needed only when GUARD_API_KEY_ENABLED is true: a key from GUARD_API_KEYS (read and runtime operations) or ' +
            'GUARD_ADMIN_API_KEYS (every operation); a key from GUARD_APPROVER_API_KEYS reads and decides approvals only. ' +
            'x-access on each operation says which: read, admin, approvals (any key) or approve (admin or approver).',
        },
      },
    },
  });
}

function problemResponse(description: string, schema: { $ref: string }) {
  return { description, content: { 'application/problem+json': { schema } } };
}

function successResponse(response: ResponseDoc, reason: string, refOf: (schema: z.ZodType) => { $ref: string }) {
  if ('mediaType' in response) {
    return { description: response.description, content: { [response.mediaType]: { schema: response.jsonSchema } } };
  }
  const [description, schema] = 'schema' in response ? [response.description, response.schema] : [reason, response];
  return { description, content: { 'application/json': { schema: refOf(schema) } } };
}

function pathParameters(url: string) {
  return [...url.matchAll(/:(\w+)/g)].map(([, name]) => {
    const known = name === undefined ? undefined : PATH_PARAMETERS[name];
    if (!known) throw new Error(`path parameter :${name} of ${url} is not described in openapi.ts PATH_PARAMETERS`);
    return { name, in: 'path', required: true, description: known.description, schema: known.schema };
  });
}

/**
 * One parameter per key of the query schema. Query values arrive as text: a key whose
 * schema carries `x-query-param` meta (queryInteger in schemas.ts) is shown with that
 * schema (an integer) instead of the digits pattern the server checks the text with.
 */
function queryParameters(query: z.ZodType | undefined) {
  if (!query) return [];
  const json = inlineSchema(query, 'input');
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, 'x-query-param': shown, ...schema } = property;
    return {
      name,
      in: 'query',
      required: required.has(name),
      ...(typeof description === 'string' ? { description } : {}),
      schema: (shown as JsonSchema | undefined) ?? schema,
    };
  });
}
