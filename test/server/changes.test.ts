// POST /api/v1/changes: many writes in one transaction, all or none.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlDataSchema } from '../../src/model/index.js';
import { call, json, seedAgentWithControl, sqlControl, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await server.close();
});

const post = (changes: unknown, headers: Record<string, string> = {}) =>
  call(server.app, 'POST', '/api/v1/changes', { changes }, headers);

const names = async () => (await server.store.listAllControls()).map((c) => c.name);

/** Does `agent` get a deny for a DROP TABLE step? Shows whether the compiled set was refreshed. */
async function denies(agent: string): Promise<boolean> {
  const res = await call(server.app, 'POST', '/api/v1/evaluation', {
    agent_name: agent,
    stage: 'pre',
    step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE users' } },
  });
  return json(res).decision === 'deny';
}

describe('POST /api/v1/changes', () => {
  it('creates, links, updates and deletes in one request and reports the touched agents', async () => {
    const res = await post([
      { op: 'create_control', control: { name: 'a', data: sqlControl(), managed_by: 'gitops:default', source: 'c.yaml:1' } },
      { op: 'create_control', control: { name: 'b' } },
      { op: 'upsert_agent', agent: { agent_name: '  Bot ', agent_description: 'a bot' } },
      { op: 'link', agent_name: 'bot', control_name: 'a' },
      { op: 'link', agent_name: 'bot', control_name: 'b' },
      { op: 'update_control', name: 'b', patch: { data: sqlControl({ action: { decision: 'log' } }), source: 'c.yaml:9' } },
      { op: 'unlink', agent_name: 'bot', control_name: 'b' },
      { op: 'delete_control', name: 'b' },
    ]);
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ applied: 8, touched_agents: ['bot'], revision: expect.any(Number) });
    expect(await names()).toEqual(['a']);
    const a = await server.store.getControlByName('a');
    expect(a).toMatchObject({ managed_by: 'gitops:default', source: 'c.yaml:1' });
    expect(a?.data?.action.decision).toBe('deny');
    expect((await server.store.getAgent('bot'))?.agent_description).toBe('a bot');
    expect((await server.store.listAgentControls('bot')).map((c) => c.name)).toEqual(['a']);
    expect(await denies('bot')).toBe(true);
  });

  it('refreshes the compiled controls of agents linked to an updated or deleted control', async () => {
    await seedAgentWithControl(server.app, 'bot', 'block-drop');
    expect(await denies('bot')).toBe(true);
    const update = await post([{ op: 'update_control', name: 'block-drop', patch: { data: sqlControl({ action: { decision: 'log' } }) } }]);
    expect(json(update)).toEqual({ applied: 1, touched_agents: ['bot'], revision: expect.any(Number) });
    expect(await denies('bot')).toBe(false);

    await post([{ op: 'update_control', name: 'block-drop', patch: { data: sqlControl() } }]);
    expect(await denies('bot')).toBe(true);
    const del = await post([{ op: 'delete_control', name: 'block-drop' }]);
    expect(json(del)).toEqual({ applied: 1, touched_agents: ['bot'], revision: expect.any(Number) });
    expect(await denies('bot')).toBe(false);
  });

  it('answers 422 with the path of every invalid field, and applies nothing', async () => {
    const res = await post([
      { op: 'create_control', control: { name: 'ok', data: sqlControl() } },
      { op: 'create_control', control: { name: 'bad', data: sqlControl({ scope: { stages: ['during' as 'pre'] } }) } },
      { op: 'update_control', name: 'ok', patch: { data: { ...sqlControl(), evaluator: { name: 'no-such', config: {} } } } },
      { op: 'link', agent_name: 'Not A Valid Name!', control_name: 'ok' },
      { op: 'rename', name: 'x' },
    ]);
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const fields = (json(res).errors as Array<{ field: string }>).map((e) => e.field);
    expect(fields).toContain('changes[3].agent_name');
    expect(fields.some((f) => f.startsWith('changes[4]'))).toBe(true);
    expect(await names()).toEqual([]);

    // Data is checked by the engine once the envelope is well-formed, each under its change.
    const data = await post([
      { op: 'create_control', control: { name: 'ok', data: sqlControl() } },
      { op: 'create_control', control: { name: 'bad', data: sqlControl({ scope: { stages: ['during' as 'pre'] } }) } },
      { op: 'update_control', name: 'ok', patch: { data: { ...sqlControl(), evaluator: { name: 'no-such', config: {} } } } },
    ]);
    expect(data.statusCode).toBe(422);
    const dataFields = (json(data).errors as Array<{ field: string }>).map((e) => e.field);
    expect(dataFields).toContain('changes[1].control.data.scope.stages[0]');
    expect(dataFields).toContain('changes[2].patch.data.evaluator.name');
    expect(await names()).toEqual([]);
  });

  it('rejects an empty list and more than 500 changes', async () => {
    expect((await post([])).statusCode).toBe(422);
    const many = Array.from({ length: 501 }, (_, i) => ({ op: 'delete_control', name: `c${i}` }));
    const res = await post(many);
    expect(res.statusCode).toBe(422);
    expect(json(res).errors[0].field).toBe('changes');
  });

  it('answers 409 naming the change on a duplicate name, rolling back the changes before it', async () => {
    await call(server.app, 'PUT', '/api/v1/controls', { name: 'taken' });
    const res = await post([
      { op: 'create_control', control: { name: 'fresh' } },
      { op: 'create_control', control: { name: 'taken' } },
    ]);
    expect(res.statusCode).toBe(409);
    expect(json(res).error_code).toBe('conflict');
    expect(json(res).detail).toMatch(/change 2 \(create_control "taken"\)/);
    expect(json(res).errors).toEqual([expect.objectContaining({ field: 'changes[1]', code: 'conflict' })]);
    expect(await names()).toEqual(['taken']);
  });

  it('answers 404 naming the change when a link names a missing control', async () => {
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' });
    const res = await post([
      { op: 'create_control', control: { name: 'fresh' } },
      { op: 'link', agent_name: 'bot', control_name: 'missing' },
    ]);
    expect(res.statusCode).toBe(404);
    expect(json(res).errors[0].field).toBe('changes[1]');
    expect(await names()).toEqual([]);
  });

  it('refuses a batch naming a watched control (409 read_only with its source) and applies nothing', async () => {
    await server.store.createControl({
      name: 'watched',
      data: ControlDataSchema.parse(sqlControl()),
      managed_by: 'watch:controls',
      source: 'controls/sql.yaml:1',
    });
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' });
    const attempts = [
      [{ op: 'update_control', name: 'watched', patch: { enabled: false } }],
      [{ op: 'delete_control', name: 'watched' }],
      [{ op: 'link', agent_name: 'bot', control_name: 'watched' }],
      [{ op: 'create_control', control: { name: 'fresh' } }, { op: 'unlink', agent_name: 'bot', control_name: 'watched' }],
    ];
    for (const changes of attempts) {
      const res = await post(changes);
      expect(res.statusCode).toBe(409);
      expect(json(res).error_code).toBe('read_only');
      expect(json(res).detail).toContain('controls/sql.yaml:1');
      expect(json(res).errors[0].field).toBe(`changes[${changes.length - 1}]`);
    }
    expect(await names()).toEqual(['watched']);
    expect((await server.store.getControlByName('watched'))?.enabled).toBe(true);
  });

  it('refuses a batch naming a watched policy (409 read_only with its source) and applies nothing', async () => {
    await server.store.createControl({ name: 'base', data: ControlDataSchema.parse(sqlControl()) });
    await server.store.createPolicy({
      name: 'baseline',
      controls: ['base'],
      agents: { match_labels: { tier: 'prod' } },
      managed_by: 'watch:controls',
      source: 'controls/policies.yaml:1',
    });
    const attempts = [
      [{ op: 'upsert_policy', policy: { name: 'baseline', controls: ['base'], agents: { names: ['bot'] } } }],
      [{ op: 'create_control', control: { name: 'fresh' } }, { op: 'delete_policy', name: 'baseline' }],
    ];
    for (const changes of attempts) {
      const res = await post(changes);
      expect(res.statusCode).toBe(409);
      expect(json(res).error_code).toBe('read_only');
      expect(json(res).detail).toContain('policy "baseline"');
      expect(json(res).detail).toContain('controls/policies.yaml:1');
      expect(json(res).change_index).toBe(changes.length - 1);
    }
    const kept = await server.store.getPolicyByName('baseline');
    expect(kept?.controls).toEqual(['base']);
    expect(await names()).toEqual(['base']);
  });

  it('refuses more than 16 names with a watched one among them too (the full-read path)', async () => {
    await server.store.createControl({ name: 'watched', managed_by: 'watch:controls', source: 'w.yaml:1' });
    const changes = [
      ...Array.from({ length: 20 }, (_, i) => ({ op: 'create_control', control: { name: `c${i}` } })),
      { op: 'delete_control', name: 'watched' },
    ];
    const res = await post(changes);
    expect(res.statusCode).toBe(409);
    expect(json(res).error_code).toBe('read_only');
    expect(await names()).toEqual(['watched']);
  });

  it('rejects a client-supplied watch: owner (422 on managed_by)', async () => {
    const res = await post([{ op: 'create_control', control: { name: 'x', managed_by: 'watch:controls' } }]);
    expect(res.statusCode).toBe(422);
    expect(json(res).errors).toEqual([expect.objectContaining({ field: 'changes[0].control.managed_by' })]);
    expect(json(res).errors[0].message).toMatch(/reserved for guardctl serve --watch/);
    expect(await names()).toEqual([]);
  });

  it('answers 400 for malformed JSON and 413 for a body over the limit', async () => {
    const raw = (payload: string) =>
      server.app.inject({ method: 'POST', url: '/api/v1/changes', payload, headers: { 'content-type': 'application/json' } });
    const bad = await raw('{"changes": [');
    expect(bad.statusCode).toBe(400);
    expect(json(bad).error_code).toBe('malformed_json');
    const big = await raw(JSON.stringify({ changes: [{ op: 'create_control', control: { name: 'x', source: 'y'.repeat(1_100_000) } }] }));
    expect(big.statusCode).toBe(413);
    expect(json(big).error_code).toBe('payload_too_large');
  });
});

describe('the reserved watch: owner on the other writes', () => {
  it('is rejected on PUT /controls and PATCH /controls/{id}', async () => {
    const put = await call(server.app, 'PUT', '/api/v1/controls', { name: 'x', managed_by: 'watch:controls' });
    expect(put.statusCode).toBe(422);
    expect(json(put).errors).toEqual([expect.objectContaining({ field: 'managed_by', message: expect.stringMatching(/reserved for guardctl serve --watch/) })]);
    expect(await names()).toEqual([]);

    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'x', managed_by: 'gitops:default' })).control_id;
    const patch = await call(server.app, 'PATCH', `/api/v1/controls/${id}`, { managed_by: 'watch:elsewhere' });
    expect(patch.statusCode).toBe(422);
    expect(json(patch).errors[0].field).toBe('managed_by');
    expect((await server.store.getControl(id))?.managed_by).toBe('gitops:default');
  });
});

describe('access', () => {
  it('is admin-only when keys are on', async () => {
    await server.close();
    server = await startTestServer({ env: { GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: 'regular-key-0000001', GUARD_ADMIN_API_KEYS: 'admin-key-000000001' } });
    const changes = [{ op: 'create_control', control: { name: 'x' } }];
    expect((await post(changes)).statusCode).toBe(401);
    const regular = await post(changes, { 'x-api-key': 'regular-key-0000001' });
    expect(regular.statusCode).toBe(403);
    expect(await names()).toEqual([]);
    expect((await post(changes, { 'x-api-key': 'admin-key-000000001' })).statusCode).toBe(200);
    expect(await names()).toEqual(['x']);
  });
});
