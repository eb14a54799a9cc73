import type { FastifyPluginAsync } from 'fastify';
import { packageVersion } from '../../version.js';
import type { ServerContext } from '../context.js';
import { buildOpenApiDocument } from '../openapi.js';

/** Health, the evaluator list and the OpenAPI document. Registered without a prefix. */
export const systemRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const version = packageVersion();
  // Built on first request and kept: it only depends on code and the version.
  let openapi: unknown;

  app.get('/health', { config: { access: 'public' } }, async () => ({ status: 'healthy', version }));

  app.get('/api/v1/evaluators', { config: { access: 'read' } }, async () => ({ evaluators: ctx.registry.list() }));

  app.get('/openapi.json', { config: { access: 'public' } }, async () => (openapi ??= buildOpenApiDocument(version)));
};
