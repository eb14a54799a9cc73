/**
 * Attack review of policies across two replicas: a set already cached on B must not
 * outlive a policy written through A (created, widened, or given another control), and
 * B's SDK refresh must report the union. Notifications only (fallback check far away).
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createSchema, dropSchemas, pgRequired, pgSuiteTitle, pgUnreachable, schemaUrl, skipReasonOf } from './pg.js';
import { denyDrop, dropStep, startPgApp, type PgApp } from './pg-app.js';

const unreachable = await pgUnreachable();
if (unreachable && !pgRequired) console.warn(skipReasonOf(unreachable));

const schemas: string[] = [];
const apps: PgApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});
afterAll(async () => {
  if (!unreachable) await dropSchemas(schemas);
});

async function decisionOn(replica: PgApp, agent: string, query = 'DROP TABLE users'): Promise<string> {
  const body = dropStep(agent);
  const res = await replica.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: { ...body, step: { ...body.step, input: { query } } } });
  expect(res.statusCode).toBe(200);
  return (JSON.parse(res.body) as { decision: string }).decision;
}

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('policy attacks on two replicas', unreachable), () => {
  it('a policy created, widened and extended through A reaches a set B had cached, and B refreshes the union', async () => {
    const url = schemaUrl(await createSchema(schemas));
    const env = { GUARD_SYNC_INTERVAL_MS: '600000' };
    const a = await startPgApp(url, env);
    apps.push(a);
    const b = await startPgApp(url, env);
    apps.push(b);
    expect((await a.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop', data: denyDrop } })).statusCode).toBe(201);
    const noRm = { ...denyDrop, evaluator: { name: 'regex', config: { pattern: 'rm -rf' } } };
    expect((await a.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-rm', data: noRm } })).statusCode).toBe(201);
    expect((await b.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'bot', labels: { team: 'ops' } } })).statusCode).toBe(201);
    // B builds and caches bot's (empty) set.
    expect(await decisionOn(b, 'bot')).toBe('allow');
    // Created through A, selecting bot only through a NotIn on a key it lacks.
    const created = await a.app.inject({
      method: 'PUT',
      url: '/api/v1/policies',
      payload: { name: 'not-dev', controls: ['no-drop'], agents: { match_expressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] } },
    });
    expect(created.statusCode, created.body).toBe(201);
    const id = (JSON.parse(created.body) as { policy_id: number }).policy_id;
    await expect.poll(() => decisionOn(b, 'bot'), { interval: 20, timeout: 1000, message: 'the new policy on B' }).toBe('deny');
    // Extended through A with a second control: B's cached set must pick it up too.
    const extended = await a.app.inject({
      method: 'PUT',
      url: `/api/v1/policies/${id}`,
      payload: { name: 'not-dev', controls: ['no-drop', 'no-rm'], agents: { match_expressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] } },
    });
    expect(extended.statusCode, extended.body).toBe(200);
    await expect.poll(() => decisionOn(b, 'bot', 'rm -rf /'), { interval: 20, timeout: 1000, message: 'the extended policy on B' }).toBe('deny');
    const refreshed = JSON.parse((await b.app.inject({ method: 'GET', url: '/api/v1/agents/bot/controls' })).body) as { controls: Array<{ name: string }>; sources: Record<string, string[]> };
    expect(refreshed.controls.map((c) => c.name).sort()).toEqual(['no-drop', 'no-rm']);
    expect(Object.values(refreshed.sources)).toEqual([['policy:not-dev'], ['policy:not-dev']]);
    // The agent re-registering on B to escape the NotIn is refused there as well.
    const escape = await b.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'bot', labels: { team: 'ops', env: 'dev' } } });
    expect(escape.statusCode, escape.body).toBe(409);
    expect(await decisionOn(a, 'bot')).toBe('deny');
  });
});
