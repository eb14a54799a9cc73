/**
 * The HTTP request metric: every request counted by method, route pattern and status,
 * and timed from its arrival to its answer, in the app's own metrics registry.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { GuardMetrics } from '../observability/index.js';

/** When the request arrived (performance.now()), for the HTTP duration metric. */
const REQUEST_STARTED = 'guardRequestStarted';

declare module 'fastify' {
  interface FastifyRequest {
    [REQUEST_STARTED]: number;
  }
}

/**
 * Adds the hooks; install them before any hook that may answer early (authentication), so
 * that refused requests are timed and counted too.
 */
export function installHttpMetrics(app: FastifyInstance, metrics: Pick<GuardMetrics, 'observeHttp'>): void {
  // Timed from onRequest to onSend rather than with an onResponse hook: an onResponse
  // hook makes Fastify attach 'finish' and 'error' listeners to every response and
  // read the clock twice more, a per-request cost larger than the metric itself.
  app.decorateRequest(REQUEST_STARTED, 0);
  app.addHook('onRequest', (request, _reply, done) => {
    request[REQUEST_STARTED] = performance.now();
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    // The route pattern, never the raw URL: ids in paths would make labels unbounded.
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.observeHttp(request.method, route, reply.statusCode, (performance.now() - request[REQUEST_STARTED]) / 1000);
    done(null, payload);
  });
}
