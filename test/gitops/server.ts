// A real server on 127.0.0.1, a free port and an in-memory database, for tests of the sync.
import { afterEach, beforeEach } from 'vitest';
import { GuardClient } from '../../src/client/index.js';
import { loadConfig } from '../../src/server/config.js';
import { startServer, type ServerHandle } from '../../src/server/start.js';

export async function startTestServer(env: Record<string, string> = {}): Promise<ServerHandle> {
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', DATABASE_URL: ':memory:', OBSERVABILITY_ENABLED: 'false', ...env });
  return startServer(config, { handleSignals: false, logger: false, print: () => {}, env: {} });
}

/**
 * A fresh server and a client of it for each test of the file, closed after it; `use`
 * receives them before each test.
 */
export function serverPerTest(use: (server: ServerHandle, client: GuardClient) => void, timeoutMs = 20_000): void {
  let server: ServerHandle | undefined;
  beforeEach(async () => {
    server = await startTestServer();
    use(server, new GuardClient({ serverUrl: server.url, timeoutMs }));
  });
  afterEach(async () => {
    await server?.close();
  });
}
