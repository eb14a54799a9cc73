import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { documentJsonSchema } from '../../gitops/json-schema.js';
import { JsonObjectSchema } from '../../model/index.js';
import { packageVersion } from '../../version.js';
import type { ServerContext } from '../context.js';
import type { HealthMonitor } from '../health.js';
import { buildOpenApiDocument, type OperationDoc } from '../openapi.js';

/** `GET /health`: `degraded` (still 200) when the database cannot be reached. */
export const HealthSchema = z.strictObject({
  status: z.enum(['healthy', 'degraded']),
  version: z.string(),
  database: z.literal('unavailable').optional(),
});

/** `GET /api/v1/evaluators`: each evaluator with the JSON Schema its `config` is checked against. */
export const EvaluatorListSchema = z.strictObject({
  evaluators: z.array(
    z.strictObject({
      name: z.string(),
      description: z.string(),
      config_schema: JsonObjectSchema.describe('JSON Schema of the evaluator’s config'),
      counts: z.boolean().describe('Its verdict depends on the steps checked before (rate, budget, repeat, a plugin declaring stateful or perSession)'),
    }),
  ),
});

const OpenApiDocumentSchema = z.looseObject({
  openapi: z.string(),
  info: JsonObjectSchema,
  paths: JsonObjectSchema,
  components: JsonObjectSchema,
});

const DOCS = {
  health: { operationId: 'getHealth', summary: 'Liveness and server version', tag: 'system', responses: { 200: HealthSchema } },
  evaluators: {
    operationId: 'listEvaluators',
    summary: 'Available evaluators and their config schemas',
    tag: 'system',
    responses: { 200: EvaluatorListSchema },
    storeless: true,
  },
  schema: {
    operationId: 'getDocumentSchema',
    summary: 'JSON Schema of the YAML control files (what guardctl schema prints), for editors',
    tag: 'system',
    responses: { 200: { description: 'The JSON Schema (draft 2020-12) of one document of a controls directory', schema: JsonObjectSchema } },
    storeless: true,
  },
  document: {
    operationId: 'getOpenApiDocument',
    summary: 'This OpenAPI 3.1 document',
    tag: 'system',
    responses: { 200: { description: 'The OpenAPI 3.1 document of this server', schema: OpenApiDocumentSchema } },
  },
} satisfies Record<string, OperationDoc>;

/** Health, the evaluator list and the OpenAPI document. Registered without a prefix. */
export const systemRoutes: FastifyPluginAsync<ServerContext & { health: HealthMonitor }> = async (app, ctx) => {
  const version = packageVersion();
  // Built on first request and kept: it only depends on the registered routes and the version.
  let openapi: unknown;

  // Degraded (database unreachable) still answers 200: the replica keeps evaluating from
  // its compiled sets, and replicas sharing one database would otherwise all leave the
  // load balancer at once, turning a write outage into a full one (docs/deployment.md).
  app.get('/health', { config: { access: 'public', openapi: DOCS.health } }, async () =>
    (await ctx.health.database()) === 'ok'
      ? { status: 'healthy', version }
      : { status: 'degraded', version, database: 'unavailable' },
  );

  app.get('/api/v1/evaluators', { config: { access: 'read', openapi: DOCS.evaluators } }, async () => ({ evaluators: ctx.registry.list() }));

  // Public like /openapi.json, so an editor can fetch it; it names only the built-in evaluators.
  let documentSchema: unknown;
  app.get('/schema.json', { config: { access: 'public', openapi: DOCS.schema } }, async () => (documentSchema ??= documentJsonSchema()));

  app.get('/openapi.json', { config: { access: 'public', openapi: DOCS.document } }, async () =>
    (openapi ??= buildOpenApiDocument(app.registeredRoutes, version)),
  );
};
