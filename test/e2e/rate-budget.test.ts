/**
 * Rate and budget controls through the built binary: exact on one server (SQLite), a
 * 24 h budget that survives a restart, and two server processes on one PostgreSQL
 * database that together allow exactly `limit` steps of one key.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSchema, dropSchemas, pgRequired, pgUnreachable, schemaUrl, skipReasonOf } from '../replicas/pg.js';
import { requireBuiltBinary, send, startServeProcess, type ServeProcess } from './serve-process.js';

requireBuiltBinary();
const unreachable = await pgUnreachable();
const schemas: string[] = [];
const processes: ServeProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  if (!unreachable) await dropSchemas(schemas);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const rateData = (limit: number) => ({
  scope: { step_types: ['tool'], step_names: ['search'], stages: ['pre'] },
  selector: { path: '*' },
  evaluator: { name: 'rate', config: { limit, window: '1m', key: 'context.user_id' } },
  action: { decision: 'deny' },
});

const budgetData = {
  scope: { step_types: ['tool'], step_names: ['pay'], stages: ['pre'] },
  selector: { path: '*' },
  evaluator: { name: 'budget', config: { max: 100, window: '24h', amount: 'input.amount_usd' } },
  action: { decision: 'deny' },
};

async function setUp(url: string, name: string, data: unknown): Promise<number> {
  expect((await send(url, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' })).status).toBeLessThan(300);
  const created = await send(url, 'PUT', '/api/v1/controls', { name, data });
  expect(created.status).toBe(201);
  const id = created.body.control_id as number;
  expect((await send(url, 'POST', `/api/v1/agents/bot/controls/${id}`)).status).toBe(200);
  return id;
}

const search = (user: string) => ({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'search', input: {}, context: { user_id: user } } });
const pay = (amount: number) => ({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'pay', input: { amount_usd: amount } } });

async function decide(url: string, body: unknown): Promise<string> {
  const res = await send(url, 'POST', '/api/v1/evaluation', body);
  expect(res.status).toBe(200);
  return res.body.decision as string;
}

describe('one server (SQLite)', () => {
  it('holds a rate limit exactly, per key, and keeps a 24 h budget across a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'guard-budget-'));
    dirs.push(dir);
    const db = join(dir, 'guard.db');
    const first = await startServeProcess({ databaseUrl: db, env: { OBSERVABILITY_ENABLED: 'false' } });
    processes.push(first);
    await setUp(first.url, 'searches-per-user', rateData(4));
    const created = await send(first.url, 'PUT', '/api/v1/controls', { name: 'spend-per-day', data: budgetData });
    expect((await send(first.url, 'POST', `/api/v1/agents/bot/controls/${created.body.control_id as number}`)).status).toBe(200);

    const decisions = await Promise.all(Array.from({ length: 12 }, () => decide(first.url, search('ann'))));
    expect(decisions.filter((d) => d === 'allow')).toHaveLength(4);
    expect(await decide(first.url, search('bob'))).toBe('allow');

    expect(await decide(first.url, pay(70))).toBe('allow');
    expect(await decide(first.url, pay(20))).toBe('allow');
    expect(await decide(first.url, pay(20))).toBe('deny');
    await first.stop();

    const second = await startServeProcess({ databaseUrl: db, env: { OBSERVABILITY_ENABLED: 'false' } });
    processes.push(second);
    // 90 of 100 spent before the restart: 20 more is over, 10 fits.
    expect(await decide(second.url, pay(20))).toBe('deny');
    expect(await decide(second.url, pay(10))).toBe('allow');
    expect(await decide(second.url, pay(0.5))).toBe('deny');
    await second.stop();
  });
});

describe.skipIf(unreachable !== null)(unreachable ? skipReasonOf(unreachable) : 'two server processes, one PostgreSQL database', () => {
  it('allow exactly limit steps of one key between them (exact mode)', async () => {
    const url = schemaUrl(await createSchema(schemas));
    const [a, b] = await Promise.all([
      startServeProcess({ databaseUrl: url, env: { OBSERVABILITY_ENABLED: 'false' } }),
      startServeProcess({ databaseUrl: url, env: { OBSERVABILITY_ENABLED: 'false' } }),
    ]);
    processes.push(a, b);
    const limit = 20;
    await setUp(a.url, 'searches-per-user', rateData(limit));
    // B hears of the control through the database's notification.
    const linked = async () => ((await send(b.url, 'GET', '/api/v1/agents/bot/controls')).body.controls as unknown[] | undefined)?.length === 1;
    await expect.poll(linked, { interval: 20, message: 'B to hear of the control' }).toBe(true);
    const decisions = await Promise.all(Array.from({ length: 3 * limit }, (_, i) => decide(i % 2 === 0 ? a.url : b.url, search('ann'))));
    expect(decisions.filter((d) => d === 'allow')).toHaveLength(limit);
    expect(decisions.filter((d) => d === 'deny')).toHaveLength(2 * limit);
  });
});

it.runIf(pgRequired)('PostgreSQL is reachable when GUARD_REQUIRE_PG=1', () => {
  expect(unreachable).toBeNull();
});
