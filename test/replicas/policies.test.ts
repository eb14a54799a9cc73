/**
 * Policies across two replicas on one PostgreSQL schema: a policy applied through A guards
 * an agent registered on B, and a label changed through A reaches evaluation on B within
 * one second (notifications only: the fallback check is set far away); a set B had cached
 * never outlives a policy written through A, and B's SDK refresh reports the union.
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
  const step = dropStep(agent);
  const res = await replica.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: { ...step, step: { ...step.step, input: { query } } } });
  expect(res.statusCode).toBe(200);
  return (JSON.parse(res.body) as { decision: string }).decision;
}

describe.skipIf(unreachable !== null && !pgRequired)(pgSuiteTitle('policies on two replicas', unreachable), () => {
  async function twoReplicas(): Promise<[PgApp, PgApp]> {
    const url = schemaUrl(await createSchema(schemas));
    const env = { GUARD_SYNC_INTERVAL_MS: '600000' };
    const a = await startPgApp(url, env);
    apps.push(a);
    const b = await startPgApp(url, env);
    apps.push(b);
    return [a, b];
  }

  it('a policy applied through A guards an agent registered later on B, from its first evaluation', async () => {
    const [a, b] = await twoReplicas();
    expect((await a.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop', data: denyDrop } })).statusCode).toBe(201);
    const policy = await a.app.inject({
      method: 'PUT',
      url: '/api/v1/policies',
      payload: { name: 'pci-baseline', controls: ['no-drop'], agents: { match_labels: { pci: 'true' } } },
    });
    expect(policy.statusCode).toBe(201);
    const registered = await b.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'pay-bot', labels: { pci: 'true' } } });
    expect(registered.statusCode).toBe(201);
    // No apply, no wait: the first evaluation on B already denies.
    expect(await decisionOn(b, 'pay-bot')).toBe('deny');
    expect(await decisionOn(a, 'pay-bot')).toBe('deny');
    const controls = JSON.parse((await b.app.inject({ method: 'GET', url: '/api/v1/agents/pay-bot/controls' })).body) as { sources: Record<string, string[]> };
    expect(Object.values(controls.sources)).toEqual([['policy:pci-baseline']]);
  });

  it('a label change and a policy delete through A reach evaluation on B (the time it takes is measured in bench/policies.ts)', async () => {
    const [a, b] = await twoReplicas();
    await a.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop', data: denyDrop } });
    await a.app.inject({ method: 'PUT', url: '/api/v1/policies', payload: { name: 'p', controls: ['no-drop'], agents: { match_labels: { tier: 'prod' } } } });
    await a.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'bot', labels: { tier: 'dev' } } });
    expect(await decisionOn(b, 'bot')).toBe('allow');
    const patched = await a.app.inject({ method: 'PATCH', url: '/api/v1/agents/bot', payload: { labels: { tier: 'prod' } } });
    expect(patched.statusCode).toBe(200);
    await expect.poll(() => decisionOn(b, 'bot'), { interval: 20, message: 'the label change on B' }).toBe('deny');
    // And a policy change through A reaches B as well.
    const id = (JSON.parse((await a.app.inject({ method: 'GET', url: '/api/v1/policies?name=p' })).body) as { policies: Array<{ policy_id: number }> }).policies[0]!.policy_id;
    expect((await a.app.inject({ method: 'DELETE', url: `/api/v1/policies/${id}` })).statusCode).toBe(200);
    await expect.poll(() => decisionOn(b, 'bot'), { interval: 20, message: 'the policy delete on B' }).toBe('allow');
  });

  it('a policy created while agents register concurrently misses none of them', async () => {
    const [a, b] = await twoReplicas();
    await a.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop', data: denyDrop } });
    const names = Array.from({ length: 20 }, (_, i) => `racer-${i}`);
    await Promise.all([
      ...names.map((agent_name) => b.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name, labels: { race: 'yes' } } })),
      a.app.inject({ method: 'PUT', url: '/api/v1/policies', payload: { name: 'race', controls: ['no-drop'], agents: { match_labels: { race: 'yes' } } } }),
    ]);
    for (const name of names) expect(await decisionOn(b, name)).toBe('deny');
  });
  it('a registration racing a policy update cannot take an agent out of the policy (Promise.all on two replicas)', async () => {
    const [a, b] = await twoReplicas();
    await a.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop', data: denyDrop } });
    const names = Array.from({ length: 16 }, (_, i) => `racer-${i}`);
    for (const agent_name of names) await a.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name, labels: { pci: 'true' } } });
    const created = await a.app.inject({ method: 'PUT', url: '/api/v1/policies', payload: { name: 'pci', controls: ['no-drop'], agents: { match_labels: { pci: 'gold' } } } });
    const id = (JSON.parse(created.body) as { policy_id: number }).policy_id;
    // It selects nobody yet: saved, and said so.
    expect((JSON.parse(created.body) as { warnings: Array<{ code: string }> }).warnings[0]?.code).toBe('selects_nothing');
    // Half the registrations go before the update, half after, the update in the middle:
    // each registration either commits before the update (it leaves nothing) or is refused.
    const registrations = names.map((agent_name) => b.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name, labels: { pci: 'false' } } }));
    const update = a.app.inject({ method: 'PUT', url: `/api/v1/policies/${id}`, payload: { name: 'pci', controls: ['no-drop'], agents: { match_labels: { pci: 'true' } } } });
    const [updated, ...answers] = await Promise.all([update, ...registrations]);
    expect(updated.statusCode).toBe(200);
    const refused = names.filter((_, i) => answers[i]!.statusCode === 409);
    for (const [i, res] of answers.entries()) {
      expect([200, 409], res.body).toContain(res.statusCode);
      if (res.statusCode === 409) expect((JSON.parse(res.body) as { errors: Array<{ code: string }> }).errors[0]?.code).toBe('leaves_policy');
      expect(await decisionOn(b, names[i]!)).toBe(res.statusCode === 409 ? 'deny' : 'allow');
    }
    // The update guarded exactly the agents still labelled pci=true when it committed:
    // had a registration written after it, that agent would be counted there and not refused.
    const history = JSON.parse((await a.app.inject({ method: 'GET', url: `/api/v1/policies/${id}/history` })).body) as { entries: Array<{ note: string | null }> };
    expect(history.entries[0]?.note).toBe(`guards ${refused.length} agent(s)`);
    const members = (JSON.parse((await b.app.inject({ method: 'GET', url: `/api/v1/policies/${id}` })).body) as { members: string[] }).members;
    expect(members).toEqual([...refused].sort());
  });
  it('a control a policy written through A binds cannot be deleted through B, alone or in a batch', async () => {
    const [a, b] = await twoReplicas();
    await a.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'no-drop', data: denyDrop } });
    await a.app.inject({ method: 'PUT', url: '/api/v1/policies', payload: { name: 'pci', controls: ['no-drop'], agents: { match_labels: { pci: 'true' } } } });
    await b.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'pay', labels: { pci: 'true' } } });
    expect(await decisionOn(b, 'pay')).toBe('deny');
    const id = (JSON.parse((await b.app.inject({ method: 'GET', url: '/api/v1/controls?name=no-drop' })).body) as { controls: Array<{ control_id: number }> }).controls[0]!.control_id;
    const deleted = await b.app.inject({ method: 'DELETE', url: `/api/v1/controls/${id}` });
    expect(deleted.statusCode).toBe(409);
    expect(JSON.parse(deleted.body)).toMatchObject({ error_code: 'conflict', errors: [{ code: 'bound_by_policy', message: 'bound by policy "pci"' }] });
    const batch = await b.app.inject({ method: 'POST', url: '/api/v1/changes', payload: { changes: [{ op: 'delete_control', name: 'no-drop' }] } });
    expect(batch.statusCode).toBe(409);
    expect(JSON.parse(batch.body)).toMatchObject({ change_index: 0, errors: [{ field: 'changes[0]', code: 'bound_by_policy' }] });
    expect(await decisionOn(a, 'pay')).toBe('deny');
    expect(await decisionOn(b, 'pay')).toBe('deny');
  });

  // Attack review: a set already cached on B must not outlive a policy written through A.
  it('a policy created, widened and extended through A reaches a set B had cached, and B refreshes the union', async () => {
    const [a, b] = await twoReplicas();
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
