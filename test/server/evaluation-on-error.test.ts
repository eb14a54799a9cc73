/**
 * on_error through POST /api/v1/evaluation with observability on (the server's default),
 * where every evaluation keeps execution records: a deny control whose evaluator fails
 * still denies, and the stored event says it fired. Real HTTP on 127.0.0.1, a real vendor
 * scorer server answering 500, a plugin loaded from a file. Failures a JSON step cannot
 * cause (a BigInt) and the regex search failing on its thread are covered in
 * test/engine/on-error-records.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvaluationResult } from '../../src/model/index.js';
import { startTestServer, type TestServer } from '../support/server.js';
import {
  failingControl,
  failureCases,
  ON_ERROR_ROWS,
  startFailingWorld,
  type FailingWorld,
  type OnErrorRow,
} from '../engine/failing-evaluators.js';

let world: FailingWorld;
let server: TestServer;
let base = '';

beforeAll(async () => {
  world = await startFailingWorld();
  // Observability as configured by default (on), on an in-memory store.
  server = await startTestServer({ config: { flushIntervalSeconds: 60 }, registry: world.registry, observability: {}, listen: true });
  expect(server.config.observabilityEnabled).toBe(true);
  base = `${server.url}/api/v1`;
});
afterAll(async () => {
  await server.close();
  await world.close();
});

async function send(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  // Every write says JSON, body or not (the server answers 415 otherwise).
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json() };
}

const cases = failureCases().filter((c) => c.json && !c.closesPool);
const table = cases.flatMap((c) => ON_ERROR_ROWS.map((row) => [c.label, row[0] ?? 'default', ...row.slice(1)] as [string, string, ...unknown[]]));

describe('POST /api/v1/evaluation with observability on: on_error on the execution-record path', () => {
  it.each(table)('%s: on_error %s on a %s control -> fires %s, decision %s (not answered as on_error allow)', async (label, onError, ...rest) => {
    const row = [onError === 'default' ? undefined : onError, ...rest] as OnErrorRow;
    const c = cases.find((x) => x.label === label)!;
    const agent = `bot-${label.replace(/\W+/g, '-')}-${String(onError)}-${row[1]}`;
    const created = await send('PUT', '/controls', { name: `fails-${agent}`, data: failingControl(c, row) });
    expect(created.status).toBe(201);
    const id = (created.json as { control_id: number }).control_id;
    expect((await send('POST', '/agents/initAgent', { agent_name: agent })).status).toBeLessThan(300);
    expect((await send('POST', `/agents/${agent}/controls/${id}`)).status).toBeLessThan(300);

    const answer = await send('POST', '/evaluation', { agent_name: agent, stage: 'pre', step: { type: 'tool', name: 't', input: c.input } });
    expect(answer.status).toBe(200);
    const result = answer.json as EvaluationResult;
    const [, , fires, decision] = row;
    expect(result.decision).toBe(decision);
    const failed = (fires ? result.matches : result.errors)[0];
    expect(fires ? result.errors : result.matches).toEqual([]);
    expect(failed?.error).toMatch(c.error);

    await server.observability!.flush();
    const page = await send('POST', '/observability/events/query', { agent_name: agent, limit: 10 });
    const events = (page.json as { events: Array<{ matched: boolean; error_message: string | null; control_id: number }> }).events;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ control_id: id, matched: fires });
    expect(events[0]!.error_message).toMatch(c.error);
  });

  it('asked the real scorer for every ai_vendor case', () => {
    expect(world.scorerCalls()).toBe(ON_ERROR_ROWS.length);
  });
});
