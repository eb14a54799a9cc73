import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { Reloader } from '../reload/index.js';
import { assembleServer } from './assemble.js';
import type { ServerConfig } from './config.js';
import { serverLoggerOptions, startLinePrinter } from './logging.js';

export interface StartOptions {
  /** Environment for evaluator plugins (GUARD_AI_VENDOR_ENABLED, VENDOR_API_KEY, ...). */
  env?: Record<string, string | undefined>;
  /** Fastify logger options; by default serverLoggerOptions: stdout, info (debug with DEBUG), in config.logFormat. */
  logger?: FastifyServerOptions['logger'];
  /** Install SIGTERM/SIGINT handlers (default true; tests starting several servers turn it off). */
  handleSignals?: boolean;
  /** Where the one "listening" line goes (stdout, in the log's format, by default). */
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

/** Assembles the server (assemble.ts) and listens; the only place the server touches a socket. */
export async function startServer(config: ServerConfig, options: StartOptions = {}): Promise<ServerHandle> {
  const server = await assembleServer(config, {
    env: options.env ?? process.env,
    logger: options.logger ?? serverLoggerOptions(config),
  });
  const { app, observability, hotReload } = server;
  try {
    await app.listen({ host: config.host, port: config.port });
    observability?.start();
  } catch (error) {
    await server.close().catch(() => undefined);
    throw error;
  }

  const { port } = app.server.address() as AddressInfo;
  const url = `http://${urlHost(config.host)}:${port}`;
  (options.print ?? startLinePrinter(config.logFormat))(
    `guardctl listening on ${url} (database: ${describeDatabase(config.databaseUrl)})` +
      (hotReload ? `, watching ${config.watchDir} (revision ${hotReload.reloader.status().last_good_revision})` : ''),
  );

  const onSignal = (signal: NodeJS.Signals) => {
    app.log.info({ signal }, 'shutting down');
    void close();
  };
  const close = async () => {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await server.close();
  };
  if (options.handleSignals ?? true) {
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }
  return hotReload ? { app, url, close, reloader: hotReload.reloader } : { app, url, close };
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

export { serverLoggerOptions } from './logging.js';
