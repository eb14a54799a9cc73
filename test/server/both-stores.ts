/**
 * A real app on each store: in-memory SQLite, and a fresh schema of the test PostgreSQL
 * (skipped with the reason shown when it is unreachable, unless GUARD_REQUIRE_PG=1).
 * Tests that say "the same on both stores" run their body once per store.
 */
import type { FastifyInstance } from 'fastify';
import type { Observability } from '../../src/observability/index.js';
import type { Store } from '../../src/store/types.js';
import { createSchema, dropSchemas, pgRequired, pgUnreachable, schemaUrl, skipReasonOf } from '../replicas/pg.js';
import { startPgApp } from '../replicas/pg-app.js';
import { startTestServer } from './helpers.js';

export interface StoreApp {
  app: FastifyInstance;
  store: Store;
  observability: Observability;
  close(): Promise<void>;
}

export interface StoreKind {
  kind: 'sqlite' | 'postgres';
  /** Why this store's tests are skipped, or null. */
  skip: string | null;
  open(env?: Record<string, string>): Promise<StoreApp>;
  /** Drops what `open` created (PostgreSQL schemas). */
  cleanup(): Promise<void>;
}

const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));

export function storeKinds(): StoreKind[] {
  const schemas: string[] = [];
  return [
    {
      kind: 'sqlite',
      skip: null,
      async open(env = {}) {
        const server = await startTestServer({ observability: true, env: { OBSERVABILITY_ENABLED: 'true', OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '3600', ...env } });
        return { app: server.app, store: server.store, observability: server.observability!, close: server.close };
      },
      cleanup: async () => undefined,
    },
    {
      kind: 'postgres',
      skip: unreachable !== null && !pgRequired ? skipReasonOf(unreachable) : null,
      async open(env = {}) {
        const schema = await createSchema(schemas);
        return startPgApp(schemaUrl(schema), env);
      },
      cleanup: () => dropSchemas(schemas),
    },
  ];
}
