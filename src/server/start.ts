import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { createDefaultRegistry, evaluatorPluginSpecs, loadEvaluatorPlugins } from '../evaluators/registry.js';
import { createObservability, type Observability } from '../observability/index.js';
import type { HotReload, Reloader } from '../reload/index.js';
import { openStore, storeTargetOf } from '../store/open-store.js';
import { buildApp } from './app.js';
import type { ServerConfig } from './config.js';

export interface StartOptions {
  /** Environment for evaluator plugins (GUARD_AI_VENDOR_ENABLED, VENDOR_API_KEY, ...). */
  env?: Record<string, string | undefined>;
  /** Fastify logger options; by default JSON logs to stdout at info (debug with DEBUG). */
  logger?: FastifyServerOptions['logger'];
  /** Install SIGTERM/SIGINT handlers (default true; tests starting several servers turn it off). */
  handleSignals?: boolean;
  /** Where the one "listening" line goes (stdout by default). */
  print?: (line: string) => void;
}

export interface ServerHandle {
  app: FastifyInstance;
  /** The URL clients use, with the real port when PORT was 0. */
  url: string;
  /** The watched directory's reloader when started with `watchDir` (`serve --watch`). */
  reloader?: Reloader;
  /** Stops accepting, finishes in-flight requests, flushes events, closes the database. Idempotent. */
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

/** Opens the store, builds the app and listens; the only place the server touches a socket. */
export async function startServer(config: ServerConfig, options: StartOptions = {}): Promise<ServerHandle> {
  const env = options.env ?? process.env;
  const store = await openStore(config.databaseUrl);
  let app: FastifyInstance | undefined;
  let observability: Observability | undefined;
  let hotReload: HotReload | undefined;
  try {
    const registry = createDefaultRegistry();
    const specs = evaluatorPluginSpecs({ ...env, GUARD_EVALUATORS: config.evaluatorPlugins.join(',') });
    await loadEvaluatorPlugins(registry, specs, process.cwd(), { env });
    // The app's logger exists only once the app does; observability logs through it.
    const late = () => app?.log;
    const writerPath = eventWriterPathOf(config);
    observability = createObservability({
      store,
      config,
      logger: { warn: (o, m) => late()?.warn(o, m), error: (o, m) => late()?.error(o, m) },
      exampleRedact: config.recordRedact,
      ...(writerPath !== undefined ? { sqlitePath: writerPath } : {}),
    });
    app = await buildApp({
      store,
      config,
      registry,
      observability,
      reload: config.watchDir === null ? undefined : { status: () => hotReload?.reloader.status() ?? null },
      logger: options.logger ?? serverLoggerOptions(config),
    });
    if (config.watchDir !== null) {
      // Loaded and applied before listening: no request ever sees the server without it.
      // An invalid directory throws (with its diagnostics) and the server does not start.
      // Imported here: the YAML parser and the file watcher cost a server without --watch
      // several MB of memory for nothing.
      const { startHotReload } = await import('../reload/index.js');
      hotReload = await startHotReload({
        dir: config.watchDir,
        store,
        controlSets: app.controlSets,
        registry,
        observability,
        logger: app.log,
      });
    }
    await app.listen({ host: config.host, port: config.port });
    observability.start();
  } catch (error) {
    await hotReload?.close().catch(() => undefined);
    await app?.close().catch(() => undefined);
    await observability?.close().catch(() => undefined);
    await store.close();
    throw error;
  }

  const listening = app;
  const events = observability;
  const watching = hotReload;
  const { port } = listening.server.address() as AddressInfo;
  const url = `http://${urlHost(config.host)}:${port}`;
  (options.print ?? ((line) => process.stdout.write(`${line}\n`)))(
    `guardctl listening on ${url} (database: ${describeDatabase(config.databaseUrl)})` +
      (hotReload ? `, watching ${config.watchDir} (revision ${hotReload.reloader.status().last_good_revision})` : ''),
  );

  let closing: Promise<void> | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    listening.log.info({ signal }, 'shutting down');
    void close();
  };
  const close = () =>
    (closing ??= (async () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      // No reload may start writing into a store that is closing.
      await watching?.close();
      // Fastify stops accepting and waits for in-flight requests before resolving.
      await listening.close();
      await events.close();
      await store.close();
    })());
  if (options.handleSignals ?? true) {
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }
  return watching ? { app: listening, url, close, reloader: watching.reloader } : { app: listening, url, close };
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** Names the database without its credentials. */
export function describeDatabase(url: string | undefined): string {
  if (url === undefined) return '.guardctl/guardctl.db';
  if (/^postgres(ql)?:\/\//.test(url)) {
    try {
      const parsed = new URL(url);
      return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
    } catch {
      return 'postgresql';
    }
  }
  return url;
}

/** The logger `guardctl serve` runs with unless told otherwise (the benchmarks use it too). */
export function serverLoggerOptions(config: Pick<ServerConfig, 'debug'>): FastifyServerOptions['logger'] {
  return {
    // Per-request lines are info; outside DEBUG only warnings and errors are logged.
    level: config.debug ? 'debug' : 'warn',
    // Keys must never reach a log line, whatever serializer a future change adds.
    redact: ['req.headers["x-api-key"]', 'req.headers.authorization'],
  };
}
