import type { FastifyPluginAsync } from 'fastify';
import { packageVersion } from '../../version.js';
import type { ServerContext } from '../context.js';
import type { HealthMonitor } from '../health.js';
import { buildOpenApiDocument } from '../openapi.js';

/** Health, the evaluator list and the OpenAPI document. Registered without a prefix. */
export const systemRoutes: FastifyPluginAsync<ServerContext & { health: HealthMonitor }> = async (app, ctx) => {
  const version = packageVersion();
  // Built on first request and kept: it only depends on code and the version.
  let openapi: unknown;

  // Degraded (database unreachable) still answers 200: the replica keeps evaluating from
  // its compiled sets, and replicas sharing one database would otherwise all leave the
  // load balancer at once, turning a write outage into a full one (docs/deployment.md).
  app.get('/health', { config: { access: 'public' } }, async () =>
    (await ctx.health.database()) === 'ok'
      ? { status: 'healthy', version }
      : { status: 'degraded', version, database: 'unavailable' },
  );

  app.get('/api/v1/evaluators', { config: { access: 'read' } }, async () => ({ evaluators: ctx.registry.list() }));

  app.get('/openapi.json', { config: { access: 'public' } }, async () => (openapi ??= buildOpenApiDocument(version)));
};
