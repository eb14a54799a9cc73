// A real server on 127.0.0.1, a free port and an in-memory database, for tests of the sync.
import { loadConfig } from '../../src/server/config.js';
import { startServer, type ServerHandle } from '../../src/server/start.js';

export async function startTestServer(env: Record<string, string> = {}): Promise<ServerHandle> {
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATABASE_URL: ':memory:', OBSERVABILITY_ENABLED: 'false', ...env });
  return startServer(config, { handleSignals: false, logger: false, print: () => {}, env: {} });
}
