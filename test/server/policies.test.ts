import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, json, sqlControl, startTestServer, step, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
  expect((await call(server.app, 'PUT', '/api/v1/controls', { name: 'block-drop', data: sqlControl() })).statusCode).toBe(201);
  expect((await call(server.app, 'PUT', '/api/v1/controls', { name: 'warn-drop', data: sqlControl({ action: { decision: 'warn' } }) })).statusCode).toBe(201);
});
afterEach(async () => {
  await server.close();
});

const register = (agent_name: string, labels?: Record<string, string>) =>
  call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name, ...(labels ? { labels } : {}) });
const evaluate = async (agent: string) => json(await call(server.app, 'POST', '/api/v1/evaluation', { ...step('DROP TABLE users'), agent_name: agent }));
const createPolicy = (body: unknown) => call(server.app, 'PUT', '/api/v1/policies', body);

describe('labels on agents', () => {
  it('registers labels, patches them, and filters GET /agents by label', async () => {
    expect((await register('pay', { team: 'payments', 'guard.example.com/pci': 'true' })).statusCode).toBe(201);
    expect((await register('chat', { team: 'support' })).statusCode).toBe(201);
    expect((await register('bare')).statusCode).toBe(201);
    const names = async (query: string) => json(await call(server.app, 'GET', `/api/v1/agents${query}`)).agents.map((a: { agent_name: string }) => a.agent_name);
    expect(await names('?label=team=payments')).toEqual(['pay']);
    expect(await names('?label=team')).toEqual(['chat', 'pay']);
    expect(await names('?label=team!=payments')).toEqual(['bare', 'chat']);
    expect(await names('?label=team=payments&label=guard.example.com/pci=true')).toEqual(['pay']);
    const patched = await call(server.app, 'PATCH', '/api/v1/agents/chat', { labels: { team: 'payments' } });
    expect(json(patched).labels).toEqual({ team: 'payments' });
    expect(await names('?label=team=payments')).toEqual(['chat', 'pay']);
    // A registration without labels keeps the stored ones.
    await register('chat');
    expect(json(await call(server.app, 'GET', '/api/v1/agents/chat')).labels).toEqual({ team: 'payments' });
  });

  it('refuses invalid label syntax and values over 63 characters with 422, storing nothing', async () => {
    const bad: Array<Record<string, string>> = [{ 'bad key!': 'x' }, { team: 'x'.repeat(64) }, { team: '-leading' }, { 'UPPER.example.com/x': 'y' }, { '/x': 'y' }];
    for (const labels of bad) {
      const res = await register('bot', labels);
      expect(res.statusCode, JSON.stringify(labels)).toBe(422);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(json(res).errors[0].field).toMatch(/^labels/);
    }
    expect((await call(server.app, 'GET', '/api/v1/agents/bot')).statusCode).toBe(404);
    expect((await call(server.app, 'GET', '/api/v1/agents?label=bad key!')).statusCode).toBe(422);
    await register('bot', { ok: 'yes' });
    expect((await call(server.app, 'PATCH', '/api/v1/agents/bot', { labels: { ok: 'y'.repeat(64) } })).statusCode).toBe(422);
    expect(json(await call(server.app, 'GET', '/api/v1/agents/bot')).labels).toEqual({ ok: 'yes' });
  });
});

describe('/api/v1/policies', () => {
  it('guards agents registering later from their first evaluation, and names each control source', async () => {
    const res = await createPolicy({ name: 'pci-baseline', controls: ['block-drop'], agents: { match_labels: { pci: 'true' } } });
    expect(res.statusCode).toBe(201);
    await register('pay', { pci: 'true' });
    expect((await evaluate('pay')).decision).toBe('deny');
    await register('other', { pci: 'false' });
    expect((await evaluate('other')).decision).toBe('allow');
    const controls = json(await call(server.app, 'GET', '/api/v1/agents/pay/controls'));
    expect(controls.controls.map((c: { name: string }) => c.name)).toEqual(['block-drop']);
    expect(Object.values(controls.sources)).toEqual([['policy:pci-baseline']]);
  });

  it('answers a write whose selector selects no registered agent with a warning, and saves it', async () => {
    const created = await createPolicy({ name: 'later', controls: ['block-drop'], agents: { match_labels: { tier: 'gold' } } });
    expect(created.statusCode).toBe(201);
    expect(json(created).warnings).toEqual([
      {
        field: 'agents',
        code: 'selects_nothing',
        message: 'policy "later" selects no registered agent: it guards agents that register later with matching labels; check the selector\'s label keys and values if you expected a match',
      },
    ]);
    const id = json(created).policy_id as number;
    expect(json(await call(server.app, 'GET', `/api/v1/policies/${id}`))).not.toHaveProperty('warnings');
    // An agent it selects: no warning on the next write; a replace that selects nobody again: warned.
    await register('gold-bot', { tier: 'gold' });
    const kept = await call(server.app, 'PUT', `/api/v1/policies/${id}`, { name: 'later', controls: ['warn-drop'], agents: { match_labels: { tier: 'gold' } } });
    expect(kept.statusCode).toBe(200);
    expect(json(kept)).not.toHaveProperty('warnings');
    const emptied = await call(server.app, 'PUT', `/api/v1/policies/${id}`, { name: 'later', controls: ['warn-drop'], agents: { match_labels: { tier: 'Gold' } } });
    expect(emptied.statusCode).toBe(200);
    expect(json(emptied).warnings[0].code).toBe('selects_nothing');
    expect(json(await call(server.app, 'GET', `/api/v1/policies/${id}`)).agents).toEqual({ match_labels: { tier: 'Gold' } });
  });

  it('evaluates a control bound by a link and two policies once', async () => {
    await register('bot', { env: 'prod' });
    const id = json(await call(server.app, 'GET', '/api/v1/controls?name=block-drop')).controls[0].control_id;
    await call(server.app, 'POST', `/api/v1/agents/bot/controls/${id}`);
    await createPolicy({ name: 'a', controls: ['block-drop'], agents: { names: ['bot'] } });
    await createPolicy({ name: 'b', controls: ['block-drop'], agents: { match_expressions: [{ key: 'env', operator: 'Exists' }] } });
    const result = await evaluate('bot');
    expect(result.decision).toBe('deny');
    expect(result.matches).toHaveLength(1);
    const detail = json(await call(server.app, 'GET', '/api/v1/agents/bot'));
    expect(detail.controls).toEqual([{ control_id: id, name: 'block-drop', sources: ['link', 'policy:a', 'policy:b'] }]);
  });

  it('a label change moves an agent into and out of a policy at once', async () => {
    await createPolicy({ name: 'prod', controls: ['block-drop'], agents: { match_labels: { tier: 'prod' } } });
    await register('bot', { tier: 'dev' });
    expect((await evaluate('bot')).decision).toBe('allow');
    await call(server.app, 'PATCH', '/api/v1/agents/bot', { labels: { tier: 'prod' } });
    expect((await evaluate('bot')).decision).toBe('deny');
    // A registration cannot take the agent out of the policy; an admin PATCH can.
    expect((await register('bot', { tier: 'dev' })).statusCode).toBe(409);
    expect((await evaluate('bot')).decision).toBe('deny');
    await call(server.app, 'PATCH', '/api/v1/agents/bot', { labels: { tier: 'dev' } });
    expect((await evaluate('bot')).decision).toBe('allow');
  });

  it('replaces, pages, deletes, and keeps history', async () => {
    await register('bot', { t: 'x' });
    const created = json(await createPolicy({ name: 'p1', controls: ['block-drop'], agents: { match_labels: { t: 'x' } } }));
    for (const n of [2, 3]) await createPolicy({ name: `p${n}`, controls: ['warn-drop'], agents: { names: ['nobody'] } });
    const page = json(await call(server.app, 'GET', '/api/v1/policies?limit=2'));
    expect(page.policies.map((p: { name: string }) => p.name)).toEqual(['p1', 'p2']);
    expect(page.pagination).toMatchObject({ has_more: true, total: 3 });
    const next = json(await call(server.app, 'GET', `/api/v1/policies?limit=2&cursor=${page.pagination.next_cursor}`));
    expect(next.policies.map((p: { name: string }) => p.name)).toEqual(['p3']);
    expect((await call(server.app, 'GET', '/api/v1/policies?limit=101')).statusCode).toBe(422);
    const replaced = await call(server.app, 'PUT', `/api/v1/policies/${created.policy_id}`, { name: 'p1', controls: ['warn-drop'], agents: { match_labels: { t: 'x' } } });
    expect(json(replaced).controls).toEqual(['warn-drop']);
    expect((await evaluate('bot')).decision).toBe('allow');
    expect(json(await call(server.app, 'GET', `/api/v1/policies/${created.policy_id}`)).members).toEqual(['bot']);
    // DELETE as curl sends it: no body, no content type.
    const deleted = await server.app.inject({ method: 'DELETE', url: `/api/v1/policies/${created.policy_id}` });
    expect(json(deleted)).toEqual({ deleted: true, unguarded_agents: ['bot'] });
    const history = json(await call(server.app, 'GET', `/api/v1/policies/${created.policy_id}/history`));
    expect(history.entries.map((e: { op: string }) => e.op)).toEqual(['delete', 'update', 'create']);
    expect((await call(server.app, 'GET', '/api/v1/policies/999')).statusCode).toBe(404);
  });

  it('refuses unknown controls, bad selectors and duplicate names with precise problems', async () => {
    const unknown = await createPolicy({ name: 'x', controls: ['block-drop', 'nope'], agents: { names: ['a'] } });
    expect(unknown.statusCode).toBe(422);
    expect(json(unknown).errors).toEqual([{ field: 'controls[1]', code: 'unknown_control', message: 'no control is named "nope"' }]);
    const badKey = await createPolicy({ name: 'x', controls: ['block-drop'], agents: { match_labels: { 'no spaces': 'a' } } });
    expect(badKey.statusCode).toBe(422);
    expect(json(badKey).errors[0].field).toBe('agents.match_labels.no spaces');
    const badOp = await createPolicy({ name: 'x', controls: ['block-drop'], agents: { match_expressions: [{ key: 'a', operator: 'In' }] } });
    expect(json(badOp).errors[0].field).toBe('agents.match_expressions[0].values');
    const nothing = await createPolicy({ name: 'x', controls: ['block-drop'], agents: {} });
    expect(nothing.statusCode).toBe(422);
    expect(json(await call(server.app, 'GET', '/api/v1/policies')).pagination.total).toBe(0);
    await createPolicy({ name: 'x', controls: ['block-drop'], agents: { names: ['a'] } });
    expect((await createPolicy({ name: 'x', controls: ['block-drop'], agents: { names: ['a'] } })).statusCode).toBe(409);
  });

  it('needs an admin key for writes, a regular key for reads', async () => {
    const authed = await startTestServer({ env: { GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: 'regular-key-123456', GUARD_ADMIN_API_KEYS: 'admin-key-1234567' } });
    try {
      const body = { name: 'p', controls: [], agents: { names: ['a'] } };
      expect((await call(authed.app, 'PUT', '/api/v1/policies', body, { 'x-api-key': 'regular-key-123456' })).statusCode).toBe(403);
      expect((await call(authed.app, 'GET', '/api/v1/policies', undefined, { 'x-api-key': 'regular-key-123456' })).statusCode).toBe(200);
      expect((await call(authed.app, 'GET', '/api/v1/policies')).statusCode).toBe(401);
    } finally {
      await authed.close();
    }
  });
});
