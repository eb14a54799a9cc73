/**
 * GUARD_PG_POOL_SIZE bounds the connections one replica opens to PostgreSQL: counted at a
 * TCP proxy in front of the database, under more concurrent writes than the pool holds.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSchema, dropSchemas, pgRequired, pgTarget, pgSuiteTitle, pgUnreachable, schemaUrl } from './pg.js';
import { denyDrop, startPgApp } from './pg-app.js';
import { startTcpProxy } from './tcp-proxy.js';

const unreachable = await pgUnreachable();
const schemas: string[] = [];
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  if (!unreachable) await dropSchemas(schemas);
});

/** The most connections a replica with this pool size held while 40 controls were written at once. */
async function peakUnderLoad(poolSize: string): Promise<number> {
  const proxy = await startTcpProxy(pgTarget());
  cleanups.push(() => proxy.close());
  const { app, close } = await startPgApp(schemaUrl(await createSchema(schemas), proxy.port), { GUARD_PG_POOL_SIZE: poolSize });
  cleanups.push(close);
  const written = await Promise.all(
    Array.from({ length: 40 }, (_, i) => app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: `c${i}`, data: denyDrop } })),
  );
  expect(written.map((res) => res.statusCode)).toEqual(Array.from({ length: 40 }, () => 201));
  return proxy.peakConnections;
}

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('PostgreSQL pool size', unreachable), () => {
  it('a replica holds at most GUARD_PG_POOL_SIZE query connections and its two listeners', async () => {
    expect(await peakUnderLoad('2')).toBeLessThanOrEqual(2 + 2);
    // The same load fills a larger pool: the bound above is the setting's, not the load's.
    expect(await peakUnderLoad('8')).toBeGreaterThan(2 + 2);
  });
});
