/**
 * The one way tests build a server in-process: assembleServer (what `guardctl serve` runs)
 * on a config made by loadConfig, with a real store (in-memory SQLite unless the config
 * names a file or a PostgreSQL URL). Tests call it through `app.inject`, or with
 * `listen: true` over a real socket on 127.0.0.1 and a free port. The helpers of each test
 * folder (test/server/helpers.ts, test/observability/app-helper.ts, ...) are presets of it.
 * Tests of the built binary start it as a process instead (test/e2e/serve-process.ts).
 */
import type { AddressInfo } from 'node:net';
import { GuardClient } from '../../src/client/index.js';
import { createDefaultRegistry, type EvaluatorRegistry } from '../../src/evaluators/registry.js';
import type { EvaluatorDefinition } from '../../src/evaluators/types.js';
import { assembleServer, type AssembledServer, type AssembleOptions } from '../../src/server/assemble.js';
import { loadConfig, type ServerConfig } from '../../src/server/config.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/types.js';

export interface TestServerOptions {
  /** The environment `guardctl serve` would read (loadConfig's first argument); nothing of the test's own. */
  env?: Record<string, string>;
  /** Settings over the environment (loadConfig's overrides). The database is `:memory:` unless one of them names another. */
  config?: Partial<ServerConfig>;
  /** Wraps the real store (for example in a counting or failing proxy). */
  wrapStore?: (store: Store) => Store;
  /** Plugin evaluators added to the built-ins (ignored when `registry` is given). */
  evaluators?: EvaluatorDefinition[];
  registry?: EvaluatorRegistry;
  /** Default: off. Process metrics are never collected (one registry per app, no timers). */
  observability?: AssembleOptions['observability'];
  storeOptions?: AssembleOptions['storeOptions'];
  watch?: AssembleOptions['watch'];
  logger?: AssembleOptions['logger'];
  /** Listen on 127.0.0.1, a free port: `url` and `client` are set. */
  listen?: boolean;
}

export interface TestServer extends AssembledServer {
  /** The base URL when listening, else ''. */
  url: string;
  /** A client of `url` when listening. */
  client: GuardClient | undefined;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const env = options.env ?? {};
  const memory = env.DATABASE_URL === undefined && env.DB_URL === undefined ? { databaseUrl: ':memory:' } : {};
  const config = loadConfig(env, { ...memory, ...(options.listen ? { host: '127.0.0.1', port: 0 } : {}), ...options.config });
  const server = await assembleServer(config, {
    // Opened here only to be wrapped; otherwise assembleServer opens it as `serve` does.
    ...(options.wrapStore ? { store: options.wrapStore(await openStore(config.databaseUrl, options.storeOptions)) } : {}),
    ...(options.storeOptions ? { storeOptions: options.storeOptions } : {}),
    registry: options.registry ?? createDefaultRegistry({ extra: options.evaluators ?? [] }),
    observability: options.observability === undefined || options.observability === false ? false : { processMetrics: false, ...options.observability },
    ...(options.watch ? { watch: options.watch } : {}),
    ...(options.logger !== undefined ? { logger: options.logger } : {}),
  });
  if (!options.listen) return { ...server, url: '', client: undefined };
  try {
    await server.app.listen({ host: '127.0.0.1', port: 0 });
  } catch (error) {
    await server.close();
    throw error;
  }
  const url = `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`;
  return { ...server, url, client: new GuardClient({ serverUrl: url }) };
}
