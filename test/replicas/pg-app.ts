import type { FastifyInstance } from 'fastify';
import type { Observability } from '../../src/observability/index.js';
import type { Store } from '../../src/store/types.js';
import { startTestServer } from '../support/server.js';
import { TEST_POOL_SIZE } from './pg.js';

export interface PgApp {
  app: FastifyInstance;
  store: Store;
  observability: Observability;
  close(): Promise<void>;
}

/** A real app on a real PostgreSQL store (test/support/server.ts), built the way start.ts builds it. */
export async function startPgApp(databaseUrl: string, env: Record<string, string> = {}): Promise<PgApp> {
  const server = await startTestServer({
    env: { DATABASE_URL: databaseUrl, OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '3600', GUARD_PG_POOL_SIZE: String(TEST_POOL_SIZE), ...env },
    // Short timeouts and retries, so a cut connection is noticed quickly.
    storeOptions: { postgres: { connectionTimeoutMs: 1000, listenerRetryMs: 100 } },
    observability: {},
  });
  return { app: server.app, store: server.store, observability: server.observability!, close: server.close };
}

export const denyDrop = {
  scope: { step_types: ['tool'], stages: ['pre'] },
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
  action: { decision: 'deny' },
};

export const dropStep = (agent: string) => ({
  agent_name: agent,
  stage: 'pre',
  step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } },
});
