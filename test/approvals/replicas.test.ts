// Approvals live in the store: approved through replica A, the step retried on replica B is
// allowed once and only once; a wait on B hears a decision made on A; a restart loses none.
// Real servers on real sockets, called the way curl and fetch call them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { assembleServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import { createSchema, dropSchemas, pgRequired, pgUnreachable, schemaUrl, skipReasonOf, TEST_POOL_SIZE } from '../replicas/pg.js';
import { ADMIN, KEYS, payment, REGULAR, seedPayments } from './helpers.js';

const unreachable = await pgUnreachable();
const schemas: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'guardctl-approvals-'));
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (!unreachable) await dropSchemas(schemas);
});

interface Replica {
  app: FastifyInstance;
  url: string;
  close(): Promise<void>;
}

async function replica(databaseUrl: string): Promise<Replica> {
  const config = loadConfig({ ...KEYS, DATABASE_URL: databaseUrl, GUARD_PG_POOL_SIZE: String(TEST_POOL_SIZE), OBSERVABILITY_ENABLED: 'false', GUARD_APPROVAL_POLL_MS: '50' });
  const server = await assembleServer(config, { registry: createDefaultRegistry(), observability: false });
  const address = await server.app.listen({ host: '127.0.0.1', port: 0 });
  return { app: server.app, url: address, close: server.close };
}

async function post(r: Replica, path: string, key: string, body?: unknown): Promise<Response> {
  // A body-less POST sends no content type at all, as `curl -X POST` does.
  return fetch(`${r.url}${path}`, {
    method: 'POST',
    headers: body === undefined ? { 'x-api-key': key } : { 'x-api-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function evaluate(r: Replica, amount: number): Promise<{ decision: string; approval?: { id: string; status: string } }> {
  const response = await post(r, '/api/v1/evaluation', REGULAR, payment(amount));
  expect(response.status).toBe(200);
  return (await response.json()) as { decision: string; approval?: { id: string; status: string } };
}

function twoReplicaSuite(label: string, databaseUrl: () => Promise<string>) {
  it(`${label}: approved on A, retried on B and A concurrently: allowed exactly once`, async () => {
    const url = await databaseUrl();
    const a = await replica(url);
    const b = await replica(url);
    try {
      await seedPayments(a.app, { 'x-api-key': ADMIN });
      const asked = await evaluate(a, 90_000);
      expect(asked.decision).toBe('ask');
      // B knows the same question.
      expect((await evaluate(b, 90_000)).approval!.id).toBe(asked.approval!.id);
      // A wait on B hears a decision made through A.
      const waiting = fetch(`${b.url}/api/v1/approvals/${asked.approval!.id}/wait?timeout=10s`, { headers: { 'x-api-key': REGULAR } });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const approve = await post(a, `/api/v1/approvals/${asked.approval!.id}/approve`, ADMIN);
      expect(approve.status).toBe(200);
      expect(((await (await waiting).json()) as { status: string }).status).toBe('approved');
      const runs = await Promise.all(Array.from({ length: 10 }, (_, i) => evaluate(i % 2 ? a : b, 90_000)));
      expect(runs.filter((r) => r.decision === 'allow')).toHaveLength(1);
      expect(runs.filter((r) => r.decision === 'ask')).toHaveLength(9);
      expect(new Set(runs.filter((r) => r.decision === 'ask').map((r) => r.approval!.id)).size).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it(`${label}: a restart while approvals are pending loses none`, async () => {
    const url = await databaseUrl();
    const first = await replica(url);
    await seedPayments(first.app, { 'x-api-key': ADMIN });
    const id = (await evaluate(first, 15_000)).approval!.id;
    await first.close();
    const second = await replica(url);
    try {
      const listed = (await (await fetch(`${second.url}/api/v1/approvals?status=pending`, { headers: { 'x-api-key': REGULAR } })).json()) as { approvals: Array<{ id: string }> };
      expect(listed.approvals.map((x) => x.id)).toEqual([id]);
      expect((await evaluate(second, 15_000)).approval!.id).toBe(id);
      expect((await post(second, `/api/v1/approvals/${id}/approve`, ADMIN)).status).toBe(200);
      expect((await evaluate(second, 15_000)).decision).toBe('allow');
    } finally {
      await second.close();
    }
  });
}

let n = 0;
describe('approvals across replicas and restarts: SQLite file', () => {
  twoReplicaSuite('sqlite', async () => `sqlite://${join(dir, `r${++n}`, 'guard.db')}`);
});

describe.skipIf(unreachable !== null && !pgRequired)(unreachable ? skipReasonOf(unreachable) : 'approvals across replicas and restarts: PostgreSQL', () => {
  twoReplicaSuite('postgres', async () => schemaUrl(await createSchema(schemas)));
});
