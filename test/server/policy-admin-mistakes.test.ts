/**
 * Attack review of policies: administrator mistakes the product should catch, each a
 * policy that would otherwise be saved and silently guard nobody (or not what it says).
 * Real app, real SQLite store.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, json, sqlControl, startTestServer, step, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
  expect((await call(server.app, 'PUT', '/api/v1/controls', { name: 'block-drop', data: sqlControl() })).statusCode).toBe(201);
  expect((await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'pay', labels: { pci: 'true', env: 'prod' } })).statusCode).toBe(201);
});
afterEach(async () => {
  await server.close();
});

const put = (agents: unknown, controls: unknown = ['block-drop']) => call(server.app, 'PUT', '/api/v1/policies', { name: 'p', controls, agents });
const decision = async (agent: string) => json(await call(server.app, 'POST', '/api/v1/evaluation', { ...step('DROP TABLE users'), agent_name: agent })).decision;

describe('policies that would guard nobody are refused or warned about', () => {
  it('YAML-typed values (true, 1, null) in match_labels are refused at the field, not coerced or dropped', async () => {
    for (const value of [true, 1, null]) {
      const res = await put({ match_labels: { pci: value } });
      expect(res.statusCode, JSON.stringify(value)).toBe(422);
      expect(json(res).errors[0].field).toBe('agents.match_labels.pci');
    }
  });

  it('In or NotIn without values, and Exists with values, are refused', async () => {
    for (const expr of [{ key: 'pci', operator: 'In', values: [] }, { key: 'pci', operator: 'NotIn' }, { key: 'pci', operator: 'Exists', values: ['true'] }]) {
      expect((await put({ match_expressions: [expr] })).statusCode, JSON.stringify(expr)).toBe(422);
    }
  });

  it('a control named in another case or with spaces is not some other control: refused, nothing saved', async () => {
    for (const controls of [['Block-Drop'], [' block-drop'], []]) {
      const res = await put({ match_labels: {} }, controls);
      expect(res.statusCode, JSON.stringify(controls)).toBe(422);
    }
    expect(json(await call(server.app, 'GET', '/api/v1/policies')).policies).toEqual([]);
  });

  it('names: [] or contradictory expressions select nobody: saved with a selects_nothing warning', async () => {
    const selectors = [
      { names: [] },
      { match_expressions: [{ key: 'env', operator: 'In', values: ['prod'] }, { key: 'env', operator: 'NotIn', values: ['prod'] }] },
      { match_expressions: [{ key: 'env', operator: 'Exists' }, { key: 'env', operator: 'DoesNotExist' }] },
    ];
    for (const [i, agents] of selectors.entries()) {
      const res = await call(server.app, 'PUT', '/api/v1/policies', { name: `p${i}`, controls: ['block-drop'], agents });
      expect([201, 422], `${JSON.stringify(agents)}: ${res.body}`).toContain(res.statusCode);
      if (res.statusCode === 201) expect(json(res).warnings, JSON.stringify(agents)).toEqual([expect.objectContaining({ code: 'selects_nothing' })]);
    }
    expect(await decision('pay')).toBe('allow');
  });

  it('match_expressions: [] alone is a selector with no requirement, like match_labels: {}: it selects every agent', async () => {
    const res = await put({ match_expressions: [] });
    expect(res.statusCode, res.body).toBe(201);
    expect(await decision('pay')).toBe('deny');
  });
});

describe('a policy whose controls are all disabled guards nothing, and says so', () => {
  beforeEach(async () => {
    expect((await call(server.app, 'PUT', '/api/v1/controls', { name: 'off-1', data: sqlControl({ enabled: false }) })).statusCode).toBe(201);
    expect((await call(server.app, 'PUT', '/api/v1/controls', { name: 'off-2', data: sqlControl({ enabled: false }) })).statusCode).toBe(201);
  });

  it('PUT /policies saves it with a binds_only_disabled warning, and the agent it selects is not guarded by it', async () => {
    const res = await put({ match_labels: { pci: 'true' } }, ['off-1', 'off-2']);
    expect(res.statusCode).toBe(201);
    expect(json(res).warnings).toEqual([
      { field: 'controls', code: 'binds_only_disabled', message: 'policy "p" binds only disabled controls: it guards nothing until one of them is enabled' },
    ]);
    expect(await decision('pay')).toBe('allow');
  });

  it('one enabled control among them is enough: no warning, and it denies', async () => {
    const res = await put({ match_labels: { pci: 'true' } }, ['off-1', 'block-drop']);
    expect(res.statusCode).toBe(201);
    expect(json(res).warnings).toBeUndefined();
    expect(await decision('pay')).toBe('deny');
  });

  it('a replace that leaves only disabled controls is warned too', async () => {
    const id = json(await put({ match_labels: { pci: 'true' } })).policy_id as number;
    const res = await call(server.app, 'PUT', `/api/v1/policies/${id}`, { name: 'p', controls: ['off-2'], agents: { match_labels: { pci: 'true' } } });
    expect(res.statusCode).toBe(200);
    expect(json(res).warnings).toEqual([expect.objectContaining({ field: 'controls', code: 'binds_only_disabled' })]);
  });
});

describe('POST /changes warns about the policies it writes as PUT /policies does', () => {
  const changes = (...list: unknown[]) => call(server.app, 'POST', '/api/v1/changes', { changes: list });
  const upsert = (name: string, controls: string[], agents: unknown) => ({ op: 'upsert_policy', policy: { name, controls, agents } });

  it('a policy selecting nobody and one binding only a disabled control: each warned at its change, both saved', async () => {
    const res = await changes(
      { op: 'create_control', control: { name: 'off', data: sqlControl({ enabled: false }) } },
      upsert('typo', ['block-drop'], { match_labels: { PCI: 'true' } }),
      upsert('dormant', ['off'], { match_labels: { pci: 'true' } }),
      upsert('healthy', ['block-drop'], { match_labels: { pci: 'true' } }),
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(json(res).warnings).toEqual([
      expect.objectContaining({ field: 'changes[1].policy.agents', code: 'selects_nothing' }),
      expect.objectContaining({ field: 'changes[2].policy.controls', code: 'binds_only_disabled' }),
    ]);
    const names = json(await call(server.app, 'GET', '/api/v1/policies')).policies.map((p: { name: string }) => p.name);
    expect(names.sort()).toEqual(['dormant', 'healthy', 'typo']);
  });

  it('a batch whose policies all guard someone carries no warnings', async () => {
    const res = await changes(upsert('healthy', ['block-drop'], { match_labels: { pci: 'true' } }));
    expect(res.statusCode).toBe(200);
    expect(json(res)).not.toHaveProperty('warnings');
  });
});
