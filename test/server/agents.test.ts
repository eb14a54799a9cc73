import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, json, seedAgentWithControl, sqlControl, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await server.close();
});

const registration = {
  agent_name: '  Support-Bot ',
  agent_description: 'Customer support',
  agent_version: '1.0',
  steps: [{ type: 'tool', name: 'run_sql' }],
};

describe('POST /api/v1/agents/initAgent', () => {
  it('creates an agent (201), normalising its name, and reports the fields set', async () => {
    const res = await call(server.app, 'POST', '/api/v1/agents/initAgent', registration);
    expect(res.statusCode).toBe(201);
    const body = json(res);
    expect(body.created).toBe(true);
    expect(body.agent).toMatchObject({ agent_name: 'support-bot', agent_version: '1.0' });
    expect(body.changes.map((c: { field: string }) => c.field).sort()).toEqual(['agent_description', 'agent_version', 'steps']);
  });

  it('answers 200 with no changes when the registration is the same', async () => {
    await call(server.app, 'POST', '/api/v1/agents/initAgent', registration);
    const res = await call(server.app, 'POST', '/api/v1/agents/initAgent', { ...registration, conflict_mode: 'strict' });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toMatchObject({ created: false, changes: [] });
  });

  it('overwrite replaces and reports before/after of each changed field', async () => {
    await call(server.app, 'POST', '/api/v1/agents/initAgent', registration);
    const res = await call(server.app, 'POST', '/api/v1/agents/initAgent', { ...registration, agent_version: '2.0' });
    expect(res.statusCode).toBe(200);
    expect(json(res).changes).toEqual([{ field: 'agent_version', before: '1.0', after: '2.0' }]);
    expect(json(await call(server.app, 'GET', '/api/v1/agents/support-bot')).agent_version).toBe('2.0');
  });

  it('keeps stored fields a registration leaves out (an SDK registering by name wipes nothing)', async () => {
    await call(server.app, 'POST', '/api/v1/agents/initAgent', registration);
    const res = await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'support-bot', conflict_mode: 'strict' });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toMatchObject({ created: false, changes: [] });
    const stored = json(await call(server.app, 'GET', '/api/v1/agents/support-bot'));
    expect(stored).toMatchObject({ agent_description: 'Customer support', agent_version: '1.0', steps: [{ type: 'tool', name: 'run_sql' }] });
  });

  it('strict answers 409 listing the differing fields and changes nothing', async () => {
    await call(server.app, 'POST', '/api/v1/agents/initAgent', registration);
    const res = await call(server.app, 'POST', '/api/v1/agents/initAgent', {
      ...registration,
      agent_version: '2.0',
      steps: [],
      conflict_mode: 'strict',
    });
    expect(res.statusCode).toBe(409);
    expect(json(res).errors.map((e: { field: string }) => e.field).sort()).toEqual(['agent_version', 'steps']);
    expect(json(await call(server.app, 'GET', '/api/v1/agents/support-bot')).agent_version).toBe('1.0');
  });

  it('keeps the links of an overwritten agent', async () => {
    await seedAgentWithControl(server.app);
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'support-bot', agent_version: '9' });
    expect(json(await call(server.app, 'GET', '/api/v1/agents/support-bot')).controls).toHaveLength(1);
  });

  it('answers 422 with field paths for bad registrations', async () => {
    const res = await call(server.app, 'POST', '/api/v1/agents/initAgent', {
      agent_name: 'bad name!',
      steps: [{ type: 'robot', name: 'x' }],
      conflict_mode: 'maybe',
      extra: 1,
    });
    expect(res.statusCode).toBe(422);
    const fields = json(res).errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(['agent_name', 'conflict_mode', 'extra', 'steps[0].type']);
  });
});

describe('agents', () => {
  it('GET /agents lists them', async () => {
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'a' });
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'b' });
    const names = json(await call(server.app, 'GET', '/api/v1/agents')).agents.map((a: { agent_name: string }) => a.agent_name);
    expect(names.sort()).toEqual(['a', 'b']);
  });

  it('GET /agents/{name} adds control ids and names; 404 when unknown', async () => {
    const id = await seedAgentWithControl(server.app);
    const res = await call(server.app, 'GET', '/api/v1/agents/SUPPORT-BOT');
    expect(res.statusCode).toBe(200);
    expect(json(res).controls).toEqual([{ control_id: id, name: 'block-drop', sources: ['link'] }]);
    expect((await call(server.app, 'GET', '/api/v1/agents/nobody')).statusCode).toBe(404);
  });

  it('PATCH /agents/{name} updates fields; 422 for bad or empty bodies; 404 unknown', async () => {
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'a', agent_description: 'old' });
    const res = await call(server.app, 'PATCH', '/api/v1/agents/a', { agent_description: 'new', metadata: { team: 'x' } });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toMatchObject({ agent_description: 'new', metadata: { team: 'x' } });
    expect((await call(server.app, 'PATCH', '/api/v1/agents/a', {})).statusCode).toBe(422);
    const bad = await call(server.app, 'PATCH', '/api/v1/agents/a', { agent_version: 3 });
    expect(json(bad).errors[0].field).toBe('agent_version');
    expect((await call(server.app, 'PATCH', '/api/v1/agents/nobody', { agent_version: '1' })).statusCode).toBe(404);
  });

  it('GET /agents/{name}/controls returns full definitions of controls that have data', async () => {
    const id = await seedAgentWithControl(server.app);
    const bare = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'no-data' })).control_id;
    await call(server.app, 'POST', `/api/v1/agents/support-bot/controls/${bare}`);
    const res = await call(server.app, 'GET', '/api/v1/agents/support-bot/controls');
    expect(res.statusCode).toBe(200);
    const body = json(res);
    expect(body.agent_name).toBe('support-bot');
    expect(body.controls).toHaveLength(1);
    expect(body.controls[0]).toMatchObject({ control_id: id, name: 'block-drop', data: { action: { decision: 'deny' } } });
    expect((await call(server.app, 'GET', '/api/v1/agents/nobody/controls')).statusCode).toBe(404);
  });
});

describe('links', () => {
  it('link and unlink are idempotent', async () => {
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'a' });
    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'c', data: sqlControl() })).control_id;
    expect(json(await call(server.app, 'POST', `/api/v1/agents/a/controls/${id}`))).toEqual({ linked: true });
    expect(json(await call(server.app, 'POST', `/api/v1/agents/a/controls/${id}`))).toEqual({ linked: false });
    expect(json(await call(server.app, 'DELETE', `/api/v1/agents/a/controls/${id}`))).toEqual({ unlinked: true });
    expect(json(await call(server.app, 'DELETE', `/api/v1/agents/a/controls/${id}`))).toEqual({ unlinked: false });
  });

  it('answers 404 for an unknown agent or control', async () => {
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'a' });
    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'c' })).control_id;
    expect((await call(server.app, 'POST', `/api/v1/agents/nobody/controls/${id}`)).statusCode).toBe(404);
    expect((await call(server.app, 'POST', '/api/v1/agents/a/controls/999')).statusCode).toBe(404);
    expect((await call(server.app, 'DELETE', '/api/v1/agents/a/controls/abc')).statusCode).toBe(404);
    expect((await call(server.app, 'DELETE', `/api/v1/agents/nobody/controls/${id}`)).statusCode).toBe(404);
  });
});
