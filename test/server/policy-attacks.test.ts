/**
 * Attack review of policies and agent labels: the bypasses an attacker tries first, each
 * kept so that it stays held. Real app, real SQLite file.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, json, sqlControl, startTestServer, step, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
  expect((await call(server.app, 'PUT', '/api/v1/controls', { name: 'block-drop', data: sqlControl() })).statusCode).toBe(201);
});
afterEach(async () => {
  await server.close();
});

const register = (agent_name: string, labels?: Record<string, string>) =>
  call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name, ...(labels ? { labels } : {}) });
const decision = async (agent: string) => json(await call(server.app, 'POST', '/api/v1/evaluation', { ...step('DROP TABLE users'), agent_name: agent })).decision;
const createPolicy = async (body: unknown) => {
  const res = await call(server.app, 'PUT', '/api/v1/policies', body);
  expect(res.statusCode, res.body).toBe(201);
  return json(res) as { policy_id: number };
};
const labelsOf = async (agent: string) => json(await call(server.app, 'GET', `/api/v1/agents/${agent}`)).labels;

describe('an agent cannot register its way out of a deny policy', () => {
  it('dropping the selected label at registration is refused (409 naming the policy); the agent stays guarded', async () => {
    await createPolicy({ name: 'pci', controls: ['block-drop'], agents: { match_labels: { pci: 'true' } } });
    expect((await register('pay', { pci: 'true', team: 'payments' })).statusCode).toBe(201);
    expect(await decision('pay')).toBe('deny');
    const escapes: Array<Record<string, string>> = [{}, { team: 'payments' }, { pci: 'false', team: 'payments' }, { PCI: 'true' }];
    for (const labels of escapes) {
      const res = await register('pay', labels);
      expect(res.statusCode, JSON.stringify(labels)).toBe(409);
      expect(json(res).detail).toContain('policy "pci"');
      expect(json(res).errors).toEqual([expect.objectContaining({ field: 'labels', code: 'leaves_policy' })]);
    }
    expect(await labelsOf('pay')).toEqual({ pci: 'true', team: 'payments' });
    expect(await decision('pay')).toBe('deny');
    // Labels that keep every policy (and a registration without labels) still go through.
    expect((await register('pay', { pci: 'true', team: 'billing' })).statusCode).toBe(200);
    expect((await register('pay')).statusCode).toBe(200);
    expect(await labelsOf('pay')).toEqual({ pci: 'true', team: 'billing' });
  });

  it('adding a label that escapes DoesNotExist or NotIn is refused too; moving into a policy is allowed', async () => {
    await createPolicy({ name: 'baseline', controls: ['block-drop'], agents: { match_expressions: [{ key: 'sandbox', operator: 'DoesNotExist' }] } });
    await createPolicy({ name: 'not-dev', controls: ['block-drop'], agents: { match_expressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] } });
    expect((await register('bot')).statusCode).toBe(201);
    expect(await decision('bot')).toBe('deny');
    const res = await register('bot', { sandbox: 'yes', env: 'dev' });
    expect(res.statusCode).toBe(409);
    expect(json(res).detail).toContain('policies "baseline", "not-dev"');
    expect(await labelsOf('bot')).toEqual({});
    // An agent outside a policy may register into it (more guard is never an escape).
    await createPolicy({ name: 'prod', controls: ['block-drop'], agents: { match_labels: { env: 'prod' } } });
    expect((await register('bot', { env: 'prod' })).statusCode).toBe(200);
    // The administrator moves an agent out deliberately.
    expect((await call(server.app, 'PATCH', '/api/v1/agents/bot', { labels: { sandbox: 'yes', env: 'dev' } })).statusCode).toBe(200);
    expect(await decision('bot')).toBe('allow');
  });

  it('an agent named by a policy stays guarded whatever labels it registers', async () => {
    await createPolicy({ name: 'named', controls: ['block-drop'], agents: { names: ['legacy'], match_labels: { x: 'y' } } });
    await register('legacy', { x: 'y' });
    expect((await register('legacy', { x: 'z' })).statusCode).toBe(200);
    expect(await decision('legacy')).toBe('deny');
  });
});

describe('label syntax at the bounds', () => {
  it('accepts 63-character names and values, a 253-character prefix, empty values and uppercase names', async () => {
    const prefix = `${'a'.repeat(62)}.${'b'.repeat(62)}.${'c'.repeat(62)}.${'d'.repeat(62)}.e`;
    expect(prefix).toHaveLength(253);
    const labels = { ['k'.repeat(63)]: 'v'.repeat(63), [`${prefix}/n`]: '', Team: 'Payments' };
    expect((await register('edge', labels)).statusCode).toBe(201);
    expect(await labelsOf('edge')).toEqual(labels);
  });

  it('refuses 64-character names and values, a 254-character prefix, uppercase prefixes, lookalikes and prototype keys', async () => {
    const prefix254 = `${'a'.repeat(62)}.${'b'.repeat(62)}.${'c'.repeat(62)}.${'d'.repeat(62)}.ee`;
    const bad: Array<Record<string, string>> = [
      { ['k'.repeat(64)]: 'v' },
      { k: 'v'.repeat(64) },
      { [`${prefix254}/n`]: 'v' },
      { 'Example.com/n': 'v' },
      { [`${'a'.repeat(64)}.com/n`]: 'v' }, // a DNS label holds at most 63 characters
      { 'tеam': 'payments' }, // Cyrillic е
      { team: 'pаyments' }, // Cyrillic а
      { 'team\u200b': 'x' },
      { team: 'x\n' },
      { __proto__x: 'y' },
      { '': 'v' },
      { 'a/b/c': 'v' },
    ];
    for (const labels of bad) {
      const res = await register('bad', labels);
      expect(res.statusCode, JSON.stringify(labels)).toBe(422);
    }
    // A raw `__proto__` key (JSON.parse makes it an own property) is refused, not swallowed.
    const raw = await server.app.inject({
      method: 'POST',
      url: '/api/v1/agents/initAgent',
      headers: { 'content-type': 'application/json' },
      payload: '{"agent_name":"bad","labels":{"__proto__":"x"}}',
    });
    expect(raw.statusCode).toBe(422);
    expect(json(raw).errors[0].field).toBe('labels.__proto__');
    expect((await call(server.app, 'GET', '/api/v1/agents/bad')).statusCode).toBe(404);
    // In a selector it would otherwise vanish and leave match_labels: {} (every agent).
    const policy = await server.app.inject({
      method: 'PUT',
      url: '/api/v1/policies',
      headers: { 'content-type': 'application/json' },
      payload: '{"name":"p","controls":["block-drop"],"agents":{"match_labels":{"__proto__":"x"}}}',
    });
    expect(policy.statusCode).toBe(422);
    expect(json(policy).errors[0].field).toBe('agents.match_labels.__proto__');
  });

  it('keys are case-sensitive and prototype names are plain keys: "constructor" selects only agents that carry it', async () => {
    await createPolicy({ name: 'proto', controls: ['block-drop'], agents: { match_expressions: [{ key: 'constructor', operator: 'Exists' }] } });
    await createPolicy({ name: 'lower', controls: ['block-drop'], agents: { match_labels: { team: 'a' } } });
    await register('plain', { Team: 'a' });
    await register('carrier', { constructor: 'x' });
    expect(await decision('plain')).toBe('allow');
    expect(await decision('carrier')).toBe('deny');
    const names = async (q: string) => json(await call(server.app, 'GET', `/api/v1/agents?label=${q}`)).agents.map((a: { agent_name: string }) => a.agent_name);
    expect(await names('constructor')).toEqual(['carrier']);
    expect(await names('toString')).toEqual([]);
  });

  it('an empty value is a value: match_labels { k: "" } selects agents with k="" only', async () => {
    await createPolicy({ name: 'empty', controls: ['block-drop'], agents: { match_labels: { k: '' } } });
    await register('with-empty', { k: '' });
    await register('without');
    expect(await decision('with-empty')).toBe('deny');
    expect(await decision('without')).toBe('allow');
  });
});

describe('selectors with odd spellings', () => {
  it('a lookalike, a trailing space or a wrong-case operator in a selector is refused (422), storing nothing', async () => {
    await register('pay', { team: 'payments' });
    const bad: unknown[] = [
      { match_labels: { 'tеam': 'payments' } }, // Cyrillic е in the key
      { match_labels: { 'team ': 'payments' } },
      { match_labels: { team: 'payments ' } },
      { match_labels: { team: 'pаyments' } }, // Cyrillic а in the value
      { match_expressions: [{ key: 'team ', operator: 'Exists' }] },
      { match_expressions: [{ key: 'tеam', operator: 'Exists' }] },
      { match_expressions: [{ key: 'team', operator: 'In', values: ['pаyments'] }] },
      { match_expressions: [{ key: 'team', operator: 'NotIn', values: ['payments\u200b'] }] },
      { match_expressions: [{ key: 'team', operator: 'exists' }] },
      { names: ['pаy'] }, // no agent can register under a Cyrillic name
      { names: ['pay\u200b'] },
    ];
    for (const agents of bad) {
      const res = await call(server.app, 'PUT', '/api/v1/policies', { name: 'odd', controls: ['block-drop'], agents });
      expect(res.statusCode, JSON.stringify(agents)).toBe(422);
      expect(json(res).errors[0].field).toMatch(/^agents\./);
    }
    expect(json(await call(server.app, 'GET', '/api/v1/policies')).policies).toEqual([]);
  });

  it('a legal spelling that matches nobody (another case) is saved with a selects_nothing warning', async () => {
    await register('pay', { team: 'payments' });
    for (const [i, agents] of [{ match_labels: { Team: 'payments' } }, { match_labels: { team: 'Payments' } }, { match_expressions: [{ key: 'TEAM', operator: 'Exists' }] }].entries()) {
      const res = await call(server.app, 'PUT', '/api/v1/policies', { name: `case-${i}`, controls: ['block-drop'], agents });
      expect(res.statusCode, JSON.stringify(agents)).toBe(201);
      expect(json(res).warnings, JSON.stringify(agents)).toEqual([expect.objectContaining({ field: 'agents', code: 'selects_nothing' })]);
    }
    expect(await decision('pay')).toBe('allow');
    // Agent names are normalised as at registration: " PAY " names the agent "pay".
    const named = await call(server.app, 'PUT', '/api/v1/policies', { name: 'named', controls: ['block-drop'], agents: { names: [' PAY '] } });
    expect(named.statusCode).toBe(201);
    expect(json(named).agents.names).toEqual(['pay']);
    expect(json(named).warnings).toBeUndefined();
    expect(await decision('pay')).toBe('deny');
  });
});

describe('selectors and bindings', () => {
  it('NotIn and DoesNotExist select agents with no labels at all (documented, as in Kubernetes)', async () => {
    await createPolicy({ name: 'notin', controls: ['block-drop'], agents: { match_expressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] } });
    await register('bare');
    expect(await decision('bare')).toBe('deny');
  });

  it('a policy that selects nobody is visible at the API: members is empty', async () => {
    const { policy_id } = await createPolicy({ name: 'nobody', controls: ['block-drop'], agents: { match_labels: { tema: 'payments' } } });
    await register('pay', { team: 'payments' });
    expect(json(await call(server.app, 'GET', `/api/v1/policies/${policy_id}`)).members).toEqual([]);
  });

  it('a control bound twice by two policies and a link is evaluated once', async () => {
    await register('bot', { a: '1', b: '2' });
    const id = json(await call(server.app, 'GET', '/api/v1/controls?name=block-drop')).controls[0].control_id;
    await call(server.app, 'POST', `/api/v1/agents/bot/controls/${id}`);
    await createPolicy({ name: 'p1', controls: ['block-drop', 'block-drop'], agents: { match_labels: { a: '1' } } });
    await createPolicy({ name: 'p2', controls: ['block-drop'], agents: { match_labels: { b: '2' } } });
    const result = json(await call(server.app, 'POST', '/api/v1/evaluation', { ...step('DROP TABLE users'), agent_name: 'bot' }));
    expect(result.decision).toBe('deny');
    expect(result.matches).toHaveLength(1);
    const set = json(await call(server.app, 'GET', '/api/v1/agents/bot/controls'));
    expect(set.controls).toHaveLength(1);
  });

  it('a control a policy binds cannot be deleted behind the policy: 409 bound_by_policy, the guard stays', async () => {
    const { policy_id } = await createPolicy({ name: 'pci', controls: ['block-drop'], agents: { match_labels: { pci: 'true' } } });
    await register('pay', { pci: 'true' });
    expect(await decision('pay')).toBe('deny');
    const id = json(await call(server.app, 'GET', '/api/v1/controls?name=block-drop')).controls[0].control_id;
    const res = await call(server.app, 'DELETE', `/api/v1/controls/${id}`);
    expect(res.statusCode).toBe(409);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(json(res)).toMatchObject({ error_code: 'conflict', errors: [{ field: 'control_id', code: 'bound_by_policy', message: 'bound by policy "pci"' }] });
    expect(json(res).detail).toContain('control "block-drop" cannot be deleted: policy "pci" binds it');
    expect(json(await call(server.app, 'GET', `/api/v1/policies/${policy_id}`)).controls).toEqual(['block-drop']);
    expect(await decision('pay')).toBe('deny');
    // Through the batch endpoint GitOps uses: refused whole, the change named.
    const batch = await call(server.app, 'POST', '/api/v1/changes', {
      changes: [
        { op: 'create_control', control: { name: 'decoy', data: sqlControl() } },
        { op: 'delete_control', name: 'block-drop' },
      ],
    });
    expect(batch.statusCode).toBe(409);
    expect(json(batch)).toMatchObject({ change_index: 1, errors: [{ field: 'changes[1]', code: 'bound_by_policy' }] });
    expect(json(await call(server.app, 'GET', '/api/v1/controls?name=decoy')).controls).toEqual([]);
    // Renaming it away and deleting the new name is the same control: still refused.
    expect((await call(server.app, 'PATCH', `/api/v1/controls/${id}`, { name: 'renamed' })).statusCode).toBe(200);
    expect(json(await call(server.app, 'GET', `/api/v1/policies/${policy_id}`)).controls).toEqual(['renamed']);
    expect((await call(server.app, 'POST', '/api/v1/changes', { changes: [{ op: 'delete_control', name: 'renamed' }] })).statusCode).toBe(409);
    expect(await decision('pay')).toBe('deny');
    // Unbinding first, in the same batch, is the way: then the control goes.
    const unbind = await call(server.app, 'POST', '/api/v1/changes', {
      changes: [
        { op: 'delete_policy', name: 'pci' },
        { op: 'delete_control', name: 'renamed' },
      ],
    });
    expect(unbind.statusCode, unbind.body).toBe(200);
    expect(await decision('pay')).toBe('allow');
  });

  it('no API client can make a policy read-only by claiming a watch: owner', async () => {
    const res = await call(server.app, 'PUT', '/api/v1/policies', { name: 'fake', controls: ['block-drop'], agents: { names: ['x'] }, managed_by: 'watch:/srv' });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('reserved for guardctl serve --watch');
  });
});
