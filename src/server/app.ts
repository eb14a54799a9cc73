import Fastify, { type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { CompileCache, compileControls, type CompiledControlSet } from '../engine/index.js';
import { AGENT_NAME_MAX } from '../model/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import { registerCounterMetrics, type Observability } from '../observability/index.js';
import type { ReloadStatusSource } from '../reload/index.js';
import { StoreError, type Store } from '../store/types.js';
import { createActorOf, createAuthHook, defaultAccess, type Access } from './auth.js';
import type { ServerConfig } from './config.js';
import type { ServerContext } from './context.js';
import { ControlSetCache } from './control-sets.js';
import { createServerCounters, type ServerCounters } from '../counting/index.js';
import { createSessionState, type SessionState } from '../sessions/index.js';
import { DatabaseClock } from '../clock.js';
import { sessionRoutes } from './routes/sessions.js';
import { HealthMonitor } from './health.js';
import { handleClientError, sendFrameworkError } from './client-errors.js';
import { installHttpMetrics } from './http-metrics.js';
import { sendOverLimit } from './body-drain.js';
import { createCrossSiteGuard } from './cross-site.js';
import { installJsonParser, requireJsonWrites } from './json-body.js';
import { installTextGuard } from './text-guard.js';
import type { OperationDoc } from './openapi.js';
import { HttpProblem, problemOf, problemOfStoreError, sendProblem, type Problem } from './problem.js';
import { startReplicaSync } from './replica-sync.js';
import { agentRoutes } from './routes/agents.js';
import { changeRoutes } from './routes/changes.js';
import { controlRoutes } from './routes/controls.js';
import { historyRoutes } from './routes/history.js';
import { policyRoutes } from './routes/policies.js';
import { mcpDriftRoutes } from './routes/mcp-drift.js';
import { mcpServerRoutes } from './routes/mcp-servers.js';
import { shadowReportRoutes } from './routes/shadow-report.js';
import { evaluationRoutes } from './routes/evaluation.js';
import { recordingRoutes } from './routes/recordings.js';
import { approvalRoutes } from './routes/approvals.js';
import { Approvals } from './approvals.js';
import { recorderFromConfig } from '../recording/from-config.js';
import { reloadRoutes } from './routes/reload.js';
import { metricsRoutes, observabilityRoutes } from './routes/observability.js';
import { systemRoutes } from './routes/system.js';
import { registerSpanDropsMetric } from './span-drops-metric.js';
import type { Tracing } from '../tracing/start.js';

export interface AppDeps {
  store: Store;
  config: ServerConfig;
  registry: EvaluatorRegistry;
  /** Events, stats, live stream and /metrics; without it those routes are not registered. */
  observability?: Observability;
  /** Watch mode's state for GET /api/v1/reload/status (`serve --watch`); absent: 404. */
  reload?: ReloadStatusSource;
  /** OpenTelemetry export (started by assemble.ts when OTEL_* configures it); absent: no spans. */
  tracing?: Tracing;
  /** Fastify logger options (false by default, so tests stay quiet). */
  logger?: FastifyServerOptions['logger'];
  /** Where rate and budget controls count; default: made from the store (counting/). The app closes them. */
  counters?: ServerCounters;
  /** Agents' sessions; default: made from the store (sessions/). The app closes them. */
  sessions?: SessionState;
}

export interface RegisteredRoute {
  method: string;
  url: string;
  access: Access;
  /** The route's entry in the OpenAPI document (openapi.ts); absent, the document leaves it out. */
  openapi?: OperationDoc | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Each agent's compiled controls. Anything that writes controls, agents or links
     * outside the routes (hot reload, replica notifications) must call
     * `app.controlSets.invalidate(agents | 'all')`.
     */
    controlSets: ControlSetCache<CompiledControlSet>;
    /** Every route with its access level, as registered (the auth matrix test walks it). */
    registeredRoutes: RegisteredRoute[];
  }
}

/**
 * Fastify logs a line when a request arrives and when it is answered, at info. guardctl
 * wants those lines only with DEBUG (level debug, see logging.ts), and a Fastify given a
 * logger does the work for them on every request whatever the level: a child logger
 * carrying the request's id, then 'finish' and 'error' listeners on the response and two
 * clock reads. Together about a tenth of an evaluation's
 * CPU. So a quiet server's Fastify gets no logger: the app logs through a pino logger of
 * its own, set as `app.log`, and routes log through `app.log` rather than `request.log`
 * (which is then silent); a 5xx log line names the method and route instead of an id.
 */
function quietLogger(logger: FastifyServerOptions['logger']): Logger | null {
  if (logger === undefined || logger === false || logger === true || typeof logger !== 'object' || logger === null) return null;
  const { level, stream, ...options } = logger as LoggerOptions & { stream?: DestinationStream };
  if (level === undefined || level === 'debug' || level === 'trace') return null;
  return pino({ ...options, level }, stream);
}

/**
 * The longest path parameter routed: an agent name of AGENT_NAME_MAX characters with every
 * character percent-encoded (3 each), and room for the spaces normalisation trims. Longer
 * parameters answer 414; shorter ones reach the route, which names what is wrong (422).
 */
export const MAX_PATH_PARAM_LENGTH = AGENT_NAME_MAX * 3 + 128;

/**
 * How often Node looks for requests past their timeout (its default, 30 s, would let a
 * slow request live up to 30 s longer than the timeout): a quarter of the shorter
 * timeout, at most once a second. Each look walks the open connections, a few µs.
 */
export function checkingIntervalOf(config: Pick<ServerConfig, 'headersTimeoutMs' | 'requestTimeoutMs'>): number {
  return Math.max(25, Math.min(1000, Math.floor(Math.min(config.headersTimeoutMs, config.requestTimeoutMs) / 4)));
}

/** Builds the server without listening (tests use inject; start.ts listens). */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { store, config, registry, observability } = deps;
  const quiet = quietLogger(deps.logger);
  const app = Fastify({
    logger: quiet ? false : (deps.logger ?? false),
    bodyLimit: config.bodyLimitBytes,
    exposeHeadRoutes: false,
    // Every name the model accepts must route, however a client percent-encodes it
    // (Fastify's default of 100 answered 414 to valid names of 101 to 128 characters).
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    // Ids are generated per request only for logs; keep them short.
    requestIdHeader: false,
    // Answers given before any route runs are problem bodies too (client-errors.ts).
    frameworkErrors: sendFrameworkError,
    clientErrorHandler: handleClientError,
    // A request must arrive in time, headers and body: a client trickling bytes cannot hold
    // a connection open. Answers are not bounded (the live stream is one long answer).
    requestTimeout: config.requestTimeoutMs,
    http: {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: checkingIntervalOf(config),
      // A request without Host gets a problem body from the cross-site guard, not Node's bare 400.
      requireHostHeader: false,
    },
    // Body schemas are only a fast pre-check (the evaluation route): they must never
    // coerce, fill defaults or strip unknown keys, or they would accept what zod rejects.
    ajv: { customOptions: { coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false } },
  });

  // Connections past the cap are closed as they arrive.
  app.server.maxConnections = config.maxConnections;

  // Plugins see the root's log through their prototype, so this reaches every route.
  if (quiet) app.log = quiet;

  // One cache for all agents: a control linked to many agents is compiled (and held) once.
  const compileCache = new CompileCache();
  const controlSets = new ControlSetCache<CompiledControlSet>(store, (controls, revision) =>
    compileControls(
      controls.map((c) => ({ control_id: c.control_id, name: c.name, data: c.data })),
      registry,
      { cache: compileCache, revision },
    ),
  );
  // A store shared by replicas announces writes: the sets follow those made through
  // the other replicas.
  const sharing = store.sharing;
  if (sharing.mode === 'shared') {
    const sync = startReplicaSync({ revision: () => store.revision(), onChange: (listener) => sharing.onChange(listener) }, controlSets, { intervalMs: config.syncIntervalMs, log: app.log });
    app.addHook('onClose', async () => sync.stop());
  }
  const routes: RegisteredRoute[] = [];
  app.decorate('controlSets', controlSets);
  app.decorate('registeredRoutes', routes);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      routes.push({ method, url: route.url, access: route.config?.access ?? defaultAccess(method), openapi: route.config?.openapi });
    }
  });

  installJsonParser(app);
  installTextGuard(app);
  // First, so that requests refused by authentication are timed and counted too.
  if (observability) installHttpMetrics(app, observability.metrics);
  // Before authentication: a rebound or cross-site request learns nothing, not even about keys.
  app.addHook('onRequest', createCrossSiteGuard(config));
  // With authentication off there is nothing to check: no hook, nothing on the hot path.
  if (config.apiKeyEnabled) app.addHook('onRequest', createAuthHook(config));
  // After authentication: a request without a key learns nothing more than its 401.
  app.addHook('onRequest', requireJsonWrites);
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = problemOfError(error, config.bodyLimitBytes);
    // The rest of the body is read first, so the client gets to read the answer (body-drain.ts).
    if (problem.status === 413) return sendOverLimit(request, reply, problem, config.bodyLimitBytes, () => sendProblem(reply, problem));
    if (problem.status >= 500) {
      // Details (stack, SQL) go to the log only; the request headers (keys) never do.
      // A quiet server's requests have no logger of their own (see quietLogger).
      (quiet ?? request.log).error({ err: error, method: request.method, url: request.routeOptions.url }, 'request failed');
    }
    return sendProblem(reply, problem);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problemOf(404, 'not_found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );

  const recorder = recorderFromConfig(store, config, (error) => app.log.warn({ err: error }, 'recording steps failed'));
  if (recorder) app.addHook('onClose', async () => recorder.close());
  // A replica's one clock, set to the database's: its counters and sessions count time alike.
  const clock = sharing.mode === 'shared' ? new DatabaseClock(() => sharing.databaseTime()) : undefined;
  const counters = deps.counters ?? createServerCounters(store, config, { clock });
  app.addHook('onClose', async () => counters.close());
  const sessions = deps.sessions ?? createSessionState(store, config, clock);
  app.addHook('onClose', async () => sessions.close());
  const controlName = controlNamesOf(store);
  if (observability) registerCounterMetrics(observability.metrics, counters, controlName);
  const approvals = new Approvals(store, config, observability, app.log);
  app.addHook('onClose', async () => approvals.close());
  const ctx: ServerContext = { store, config, registry, controlSets, observability, recorder, tracing: deps.tracing, counters, sessions, approvals, actorOf: createActorOf(config) };
  if (observability && deps.tracing) registerSpanDropsMetric(observability.metrics, deps.tracing);
  // One plugin per resource, in one readable list.
  await app.register(systemRoutes, { ...ctx, health: new HealthMonitor(store) });
  await app.register(agentRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(controlRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(policyRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(mcpServerRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(changeRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(historyRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(evaluationRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(sessionRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(recordingRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(approvalRoutes, { ...ctx, prefix: '/api/v1' });
  await app.register(reloadRoutes, { reload: deps.reload, prefix: '/api/v1' });
  if (observability) {
    await app.register(observabilityRoutes, { observability, store, config, counters, controlName, prefix: '/api/v1' });
    await app.register(mcpDriftRoutes, { observability, store, prefix: '/api/v1' });
    await app.register(metricsRoutes, { observability, access: config.metricsRequireKey ? 'read' : 'public' });
    await app.register(shadowReportRoutes, { store, prefix: '/api/v1' });
  }
  await app.ready();
  return app;
}

/**
 * Control names by id for counter stats and metrics, read from the store at most every
 * 10 seconds (a scrape or a stats call, never an evaluation).
 */
function controlNamesOf(store: Store): (controlId: number) => Promise<string | undefined> {
  let names: Map<number, string> | undefined;
  let at = 0;
  return async (controlId) => {
    if (names === undefined || Date.now() - at > 10_000 || !names.has(controlId)) {
      const fresh = new Map((await store.listAllControls()).map((c) => [c.control_id, c.name] as const));
      names = fresh;
      at = Date.now();
    }
    return names.get(controlId);
  };
}

/** The 413 detail: the limit in bytes, so a client's error names it. */
export function bodyLimitDetail(bodyLimitBytes: number | undefined): string {
  const limit = bodyLimitBytes === undefined ? '' : `, ${bodyLimitBytes} bytes`;
  return `the request body is larger than the server accepts (GUARD_BODY_LIMIT_BYTES${limit})`;
}

/** Every error leaves as problem+json; anything unexpected says only "internal error". */
export function problemOfError(error: FastifyError | Error, bodyLimitBytes?: number): Problem {
  if (error instanceof HttpProblem) return { ...problemOf(error.status, error.errorCode, error.detail, error.errors), ...error.extensions };
  if (error instanceof StoreError) return problemOfStoreError(error);
  const code = (error as FastifyError).code;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problemOf(413, 'payload_too_large', bodyLimitDetail(bodyLimitBytes));
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problemOf(400, 'malformed_json', 'the request body is not valid JSON');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problemOf(415, 'unsupported_media_type', 'send the body as application/json');
    default:
      break;
  }
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    // Fastify's own client errors (bad content length, etc.) carry safe messages.
    return status === 413 ? problemOf(413, 'payload_too_large', bodyLimitDetail(bodyLimitBytes)) : problemOf(status, 'malformed_json', error.message);
  }
  return problemOf(500, 'internal', 'internal error');
}
