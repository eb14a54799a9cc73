/**
 * Builds a whole server from a config, without listening: the store, the evaluator
 * registry, observability, the app and (with `watchDir`) hot reload, plus the one close
 * that stops them in the right order. `startServer` listens on what this builds; tests
 * and benchmarks build their servers here too, so every server is put together alike.
 */
import { startHistoryRetention } from './history-retention.js';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { createDefaultRegistry, evaluatorPluginSpecs, loadEvaluatorPlugins, type EvaluatorRegistry } from '../evaluators/registry.js';
import { createObservability, type CreateObservabilityOptions, type Observability } from '../observability/index.js';
import type { HotReload, WatchOptions } from '../reload/index.js';
import { openStore, storeTargetOf, type OpenStoreOptions } from '../store/open-store.js';
import type { SessionState } from '../sessions/index.js';
import type { Store } from '../store/types.js';
import type { Tracing } from '../tracing/start.js';
import { packageVersion } from '../version.js';
import { buildApp } from './app.js';
import type { ServerConfig } from './config.js';

export interface AssembleOptions {
  /** A store to serve instead of opening `config.databaseUrl` (a seeded or wrapped one). The server closes it. */
  store?: Store;
  /** How `config.databaseUrl` is opened when no store is given. */
  storeOptions?: OpenStoreOptions;
  /**
   * The evaluators to serve. Default: the built-ins plus the plugins `config` and `env`
   * name (GUARD_EVALUATORS, GUARD_AI_VENDOR_ENABLED).
   */
  registry?: EvaluatorRegistry;
  /** Environment for evaluator plugins; default `process.env`. */
  env?: Record<string, string | undefined>;
  /**
   * Events, stats, live stream and /metrics; `false` leaves them out (and their routes).
   * `writerThread: false` writes a SQLite file's events inline instead of from a thread.
   */
  observability?: false | (Pick<CreateObservabilityOptions, 'processMetrics' | 'stream' | 'workerUrl'> & { writerThread?: boolean });
  /** Fastify logger options (none by default). */
  logger?: FastifyServerOptions['logger'];
  /** File watcher tuning for watch mode (`config.watchDir`). */
  watch?: WatchOptions;
  /** Makes the agents' sessions on the opened store; default: made from the store (sessions/). */
  sessions?: (store: Store) => SessionState;
}

export interface AssembledServer {
  app: FastifyInstance;
  store: Store;
  config: ServerConfig;
  registry: EvaluatorRegistry;
  /** Absent when assembled with `observability: false`. */
  observability: Observability | undefined;
  /** Watch mode's reload, when `config.watchDir` is set (its first load is done). */
  hotReload: HotReload | undefined;
  /** OpenTelemetry export, when `config.tracing` is set. */
  tracing: Tracing | undefined;
  /** Stops watching, closes the app (in-flight requests finish), flushes events, closes the store. Idempotent. */
  close(): Promise<void>;
}

/**
 * The SQLite file observability's writer thread opens, if it gets one: SQLite files do
 * (docs/observability.md), but only with observability on. With it off no events are
 * written, and the thread (its own V8 heap and database connection, about 8 MB resident)
 * would only sit idle.
 */
export function eventWriterPathOf(config: Pick<ServerConfig, 'databaseUrl' | 'observabilityEnabled'>): string | undefined {
  const target = storeTargetOf(config.databaseUrl);
  return target.kind === 'sqlite' && config.observabilityEnabled ? target.path : undefined;
}

/**
 * Opens (or takes) the store and builds everything on it. A failure part-way closes what
 * was built and rethrows; an invalid watched directory throws its diagnostics.
 */
export async function assembleServer(config: ServerConfig, options: AssembleOptions = {}): Promise<AssembledServer> {
  const store = options.store ?? (await openStore(config.databaseUrl, storeOptionsOf(config, options.storeOptions)));
  let app: FastifyInstance | undefined;
  let observability: Observability | undefined;
  let hotReload: HotReload | undefined;
  let tracing: Tracing | undefined;
  let retention: { stop(): Promise<void> } | undefined;
  const closeAll = async () => {
    // No reload may start writing into a store that is closing.
    await hotReload?.close();
    await retention?.stop();
    // Fastify stops accepting and waits for in-flight requests before resolving.
    await app?.close();
    await observability?.close();
    // Last: the spans of the requests that just finished go out (bounded: a dead collector must not hold the stop).
    await tracing?.shutdown();
    await store.close();
  };
  try {
    const registry = options.registry ?? (await defaultRegistry(config, options.env ?? process.env));
    if (config.tracing) {
      // Imported here: a server without tracing never loads the tracer and its encoders.
      const { startTracing } = await import('../tracing/start.js');
      tracing = await startTracing(config.tracing, { serviceVersion: packageVersion() });
    }
    if (options.observability !== false) {
      const { writerThread = true, ...tuning } = options.observability ?? {};
      const writerPath = writerThread ? eventWriterPathOf(config) : undefined;
      // The app's logger exists only once the app does; observability logs through it.
      const late = () => app?.log;
      observability = createObservability({
        store,
        config,
        logger: { warn: (o, m) => late()?.warn(o, m), error: (o, m) => late()?.error(o, m) },
        exampleRedact: config.recordRedact,
        ...tuning,
        ...(writerPath !== undefined ? { sqlitePath: writerPath } : {}),
      });
    }
    app = await buildApp({
      store,
      config,
      registry,
      ...(observability ? { observability } : {}),
      ...(tracing ? { tracing } : {}),
      ...(config.watchDir === null ? {} : { reload: { status: () => hotReload?.reloader.status() ?? null } }),
      logger: options.logger ?? false,
      ...(options.sessions ? { sessions: options.sessions(store) } : {}),
    });
    if (config.watchDir !== null) {
      // Loaded and applied before anyone can reach the app: no request ever sees the
      // server without it. Imported here: the YAML parser and the file watcher cost a
      // server without --watch several MB of memory for nothing.
      const { startHotReload } = await import('../reload/index.js');
      hotReload = await startHotReload({
        dir: config.watchDir,
        store,
        controlSets: app.controlSets,
        registry,
        observability,
        tracer: tracing,
        logger: app.log,
        ...(options.watch ? { watch: options.watch } : {}),
      });
    }
    retention = startHistoryRetention(store, config, (err) => app?.log.warn({ err }, 'pruning the change history failed'));
    let closing: Promise<void> | undefined;
    return {
      app,
      store,
      config,
      registry,
      observability,
      hotReload,
      tracing,
      close: () => (closing ??= closeAll()),
    };
  } catch (error) {
    await hotReload?.close().catch(() => undefined);
    await retention?.stop().catch(() => undefined);
    await app?.close().catch(() => undefined);
    await observability?.close().catch(() => undefined);
    await tracing?.shutdown(0);
    await store.close();
    throw error;
  }
}

/** The config's PostgreSQL timeouts and pool size, under what the caller set explicitly. */
function storeOptionsOf(config: ServerConfig, given: OpenStoreOptions = {}): OpenStoreOptions {
  return {
    ...given,
    postgres: {
      statementTimeoutMs: config.pgStatementTimeoutMs,
      queryTimeoutMs: config.pgQueryTimeoutMs,
      connectionTimeoutMs: config.pgConnectTimeoutMs,
      maxConnections: config.pgPoolSize,
      counterTimeoutMs: config.counterTimeoutMs,
      ...given.postgres,
    },
  };
}

async function defaultRegistry(config: ServerConfig, env: Record<string, string | undefined>): Promise<EvaluatorRegistry> {
  const registry = createDefaultRegistry();
  const specs = evaluatorPluginSpecs({ ...env, GUARD_EVALUATORS: config.evaluatorPlugins.join(',') });
  await loadEvaluatorPlugins(registry, specs, process.cwd(), { env });
  return registry;
}
