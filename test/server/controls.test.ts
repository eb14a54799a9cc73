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

describe('PUT /api/v1/controls', () => {
  it('creates a control with a name only (two-step creation)', async () => {
    const res = await call(server.app, 'PUT', '/api/v1/controls', { name: 'block-drop' });
    expect(res.statusCode).toBe(201);
    const body = json(res);
    expect(body.control_id).toBeGreaterThan(0);
    expect(body).toMatchObject({ name: 'block-drop', data: null, managed_by: null });
    const data = await call(server.app, 'PUT', `/api/v1/controls/${body.control_id}/data`, { data: sqlControl() });
    expect(data.statusCode).toBe(200);
    const fetched = await call(server.app, 'GET', `/api/v1/controls/${body.control_id}/data`);
    expect(json(fetched).data).toMatchObject({ action: { decision: 'deny' }, selector: { path: 'input.query' } });
  });

  it('creates a control with its data in one step', async () => {
    const res = await call(server.app, 'PUT', '/api/v1/controls', { name: 'one-step', data: sqlControl() });
    expect(res.statusCode).toBe(201);
    expect(json(res).data).toMatchObject({ enabled: true, execution: 'server' });
  });

  it('answers 409 for a duplicate name', async () => {
    await call(server.app, 'PUT', '/api/v1/controls', { name: 'dup' });
    const res = await call(server.app, 'PUT', '/api/v1/controls', { name: 'dup' });
    expect(res.statusCode).toBe(409);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(json(res).error_code).toBe('conflict');
  });

  it('answers 422 with data.-prefixed paths for invalid data, and stores nothing', async () => {
    const res = await call(server.app, 'PUT', '/api/v1/controls', {
      name: 'bad',
      data: sqlControl({ scope: { stages: ['during' as 'pre'] }, evaluator: { name: 'regex', config: { pattern: '(' } } }),
    });
    expect(res.statusCode).toBe(422);
    const fields = json(res).errors.map((e: { field: string }) => e.field);
    expect(fields).toContain('data.scope.stages[0]');
    const list = await call(server.app, 'GET', '/api/v1/controls');
    expect(json(list).pagination.total).toBe(0);
  });

  it('answers 422 naming an invalid regex pattern', async () => {
    const res = await call(server.app, 'PUT', '/api/v1/controls', {
      name: 'bad-regex',
      data: sqlControl({ evaluator: { name: 'regex', config: { pattern: '(' } } }),
    });
    expect(res.statusCode).toBe(422);
    expect(json(res).errors.map((e: { field: string }) => e.field)).toContain('data.evaluator.config.pattern');
  });

  it('answers 422 for bad names and unknown fields', async () => {
    const res = await call(server.app, 'PUT', '/api/v1/controls', { name: '-bad', colour: 'red' });
    expect(res.statusCode).toBe(422);
    const fields = json(res).errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(['colour', 'name']);
  });
});

describe('GET /api/v1/controls (pagination)', () => {
  beforeEach(async () => {
    for (let i = 0; i < 5; i++) await call(server.app, 'PUT', '/api/v1/controls', { name: `c${i}` });
  });

  it('walks pages with the cursor until has_more is false', async () => {
    const first = json(await call(server.app, 'GET', '/api/v1/controls?limit=2'));
    expect(first.controls.map((c: { name: string }) => c.name)).toEqual(['c0', 'c1']);
    expect(first.pagination).toMatchObject({ limit: 2, has_more: true, total: 5 });
    const second = json(await call(server.app, 'GET', `/api/v1/controls?limit=2&cursor=${first.pagination.next_cursor}`));
    expect(second.controls.map((c: { name: string }) => c.name)).toEqual(['c2', 'c3']);
    const third = json(await call(server.app, 'GET', `/api/v1/controls?limit=2&cursor=${second.pagination.next_cursor}`));
    expect(third.controls.map((c: { name: string }) => c.name)).toEqual(['c4']);
    expect(third.pagination).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('defaults to 20 and accepts exactly 100', async () => {
    expect(json(await call(server.app, 'GET', '/api/v1/controls')).pagination.limit).toBe(20);
    expect((await call(server.app, 'GET', '/api/v1/controls?limit=100')).statusCode).toBe(200);
  });

  it.each([['limit=101', 'limit'], ['limit=0', 'limit'], ['limit=abc', 'limit'], ['cursor=-1', 'cursor'], ['colour=red', 'colour']])(
    'answers 422 for %s',
    async (query, field) => {
      const res = await call(server.app, 'GET', `/api/v1/controls?${query}`);
      expect(res.statusCode).toBe(422);
      expect(json(res).errors[0].field).toBe(field);
    },
  );

  it('finds a control by exact name', async () => {
    const hit = json(await call(server.app, 'GET', '/api/v1/controls?name=c3'));
    expect(hit.controls.map((c: { name: string }) => c.name)).toEqual(['c3']);
    const miss = json(await call(server.app, 'GET', '/api/v1/controls?name=nope'));
    expect(miss.controls).toEqual([]);
  });
});

describe('one control', () => {
  it('GET answers the record, 404 for unknown or malformed ids', async () => {
    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'x' })).control_id;
    expect(json(await call(server.app, 'GET', `/api/v1/controls/${id}`)).name).toBe('x');
    for (const bad of ['999', 'abc', '0', '-1', '1.5']) {
      const res = await call(server.app, 'GET', `/api/v1/controls/${bad}`);
      expect(res.statusCode).toBe(404);
      expect(json(res).error_code).toBe('not_found');
    }
  });

  it('PATCH renames and disables; needs at least one field', async () => {
    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'x', data: sqlControl() })).control_id;
    const res = await call(server.app, 'PATCH', `/api/v1/controls/${id}`, { name: 'y', enabled: false });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toMatchObject({ name: 'y', enabled: false });
    expect(json(await call(server.app, 'GET', `/api/v1/controls/${id}/data`)).data.enabled).toBe(false);
    expect((await call(server.app, 'PATCH', `/api/v1/controls/${id}`, {})).statusCode).toBe(422);
    const typed = await call(server.app, 'PATCH', `/api/v1/controls/${id}`, { enabled: 'no' });
    expect(json(typed).errors[0].field).toBe('enabled');
    expect((await call(server.app, 'PATCH', '/api/v1/controls/999', { enabled: true })).statusCode).toBe(404);
  });

  it('PATCH to a name already taken answers 409 and changes nothing', async () => {
    await call(server.app, 'PUT', '/api/v1/controls', { name: 'a' });
    const b = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'b' })).control_id;
    const res = await call(server.app, 'PATCH', `/api/v1/controls/${b}`, { name: 'a', enabled: false });
    expect(res.statusCode).toBe(409);
    expect(json(await call(server.app, 'GET', `/api/v1/controls/${b}`))).toMatchObject({ name: 'b', enabled: true });
  });

  it('GET data of a control without data answers 404 with a hint', async () => {
    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'x' })).control_id;
    const res = await call(server.app, 'GET', `/api/v1/controls/${id}/data`);
    expect(res.statusCode).toBe(404);
    expect(json(res).detail).toContain(`PUT /api/v1/controls/${id}/data`);
  });

  it('PUT data validates with data. paths and keeps the old data on failure', async () => {
    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'x', data: sqlControl() })).control_id;
    const res = await call(server.app, 'PUT', `/api/v1/controls/${id}/data`, { data: { action: { decision: 'block' } } });
    expect(res.statusCode).toBe(422);
    expect(json(res).errors.map((e: { field: string }) => e.field)).toContain('data.action.decision');
    expect(json(await call(server.app, 'GET', `/api/v1/controls/${id}/data`)).data.action.decision).toBe('deny');
    expect((await call(server.app, 'PUT', '/api/v1/controls/999/data', { data: sqlControl() })).statusCode).toBe(404);
  });

  it('DELETE removes the control and reports the agents it was unlinked from', async () => {
    const id = await seedAgentWithControl(server.app);
    const res = await call(server.app, 'DELETE', `/api/v1/controls/${id}`);
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ deleted: true, unlinked_agents: ['support-bot'] });
    expect((await call(server.app, 'GET', `/api/v1/controls/${id}`)).statusCode).toBe(404);
    expect(json(await call(server.app, 'GET', '/api/v1/agents/support-bot/controls')).controls).toEqual([]);
    expect((await call(server.app, 'DELETE', `/api/v1/controls/${id}`)).statusCode).toBe(404);
  });
});

describe('POST /api/v1/controls/validate', () => {
  it('answers 200 for valid data and saves nothing', async () => {
    const res = await call(server.app, 'POST', '/api/v1/controls/validate', { data: sqlControl() });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ success: true });
    expect(json(await call(server.app, 'GET', '/api/v1/controls')).pagination.total).toBe(0);
  });

  it('answers 422 with the same problem body that saving would give', async () => {
    const data = sqlControl({ selector: { path: 'inptu.query' }, evaluator: { name: 'nope', config: {} } });
    const validate = await call(server.app, 'POST', '/api/v1/controls/validate', { data });
    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'x' })).control_id;
    const save = await call(server.app, 'PUT', `/api/v1/controls/${id}/data`, { data });
    expect(validate.statusCode).toBe(422);
    expect(json(validate)).toEqual(json(save));
    const fields = json(validate).errors.map((e: { field: string }) => e.field);
    expect(fields).toContain('data.selector.path');
  });

  it('names every problem at once: a schema error does not hide a bad pattern', async () => {
    // An unknown scope key (outside the input type, hence the spread) and a look-ahead RE2 rejects.
    const data = { ...sqlControl({ evaluator: { name: 'regex', config: { pattern: 'secret(?=key)' } } }), scope: { stagez: ['pre'] } };
    const validate = await call(server.app, 'POST', '/api/v1/controls/validate', { data });
    expect(validate.statusCode).toBe(422);
    expect(validate.headers['content-type']).toContain('application/problem+json');
    expect(json(validate).errors.map((e: { field: string; code: string }) => `${e.field} ${e.code}`)).toEqual([
      'data.scope.stagez unknown_field',
      'data.evaluator.config.pattern invalid_config',
    ]);
    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'x' })).control_id;
    expect(json(await call(server.app, 'PUT', `/api/v1/controls/${id}/data`, { data }))).toEqual(json(validate));
  });
});

describe('controls managed by watch mode', () => {
  it('are read-only through the API, naming their source file', async () => {
    // Only watch mode owns controls as `watch:`; it writes through the store, not the API.
    const { control_id: id } = await server.store.createControl({
      name: 'watched',
      data: ControlDataSchema.parse(sqlControl()),
      managed_by: 'watch:controls',
      source: 'controls/sql.yaml:1',
    });
    await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot' });
    const attempts = [
      await call(server.app, 'PATCH', `/api/v1/controls/${id}`, { enabled: false }),
      await call(server.app, 'PUT', `/api/v1/controls/${id}/data`, { data: sqlControl() }),
      await call(server.app, 'DELETE', `/api/v1/controls/${id}`),
      await call(server.app, 'POST', `/api/v1/agents/bot/controls/${id}`),
      await call(server.app, 'DELETE', `/api/v1/agents/bot/controls/${id}`),
    ];
    for (const res of attempts) {
      expect(res.statusCode).toBe(409);
      expect(json(res).error_code).toBe('read_only');
      expect(json(res).detail).toContain('controls/sql.yaml:1');
    }
    expect(json(await call(server.app, 'GET', `/api/v1/controls/${id}`)).enabled).toBe(true);
  });
});
