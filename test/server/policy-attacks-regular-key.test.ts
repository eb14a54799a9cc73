/**
 * Attack review of policies, round three: what a client holding only a REGULAR key (the
 * agent's own) can try against a policy that selects it, with API keys switched on. Real
 * app, on SQLite and on PostgreSQL (the refusal is checked inside each store's write); every attempt ends by asking the evaluation itself.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeKinds, type StoreApp } from './both-stores.js';
import { call, json, sqlControl, step } from './helpers.js';

const REGULAR = { 'x-api-key': 'regular-key-000001' };
const ADMIN = { 'x-api-key': 'admin-key-00000001' };

const AUTH_ENV = { GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: 'regular-key-000001', GUARD_ADMIN_API_KEYS: 'admin-key-00000001', GUARD_AUTH_MAX_FAILURES: '100000' };

for (const store of storeKinds()) {
  describe.skipIf(store.skip !== null)(store.skip ?? `policy attacks with a regular key (${store.kind})`, () => {
    let server: StoreApp;
    let controlId: number;
    afterAll(() => store.cleanup());
    beforeEach(async () => {
      server = await store.open(AUTH_ENV);
      const created = await call(server.app, 'PUT', '/api/v1/controls', { name: 'block-drop', data: sqlControl() }, ADMIN);
      expect(created.statusCode).toBe(201);
      controlId = json(created).control_id;
    });
    afterEach(async () => {
      await server.close();
    });

    const register = (body: Record<string, unknown>) => call(server.app, 'POST', '/api/v1/agents/initAgent', body, REGULAR);
    const rawRegister = (payload: string) =>
      server.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload, headers: { 'content-type': 'application/json', ...REGULAR } });
    const decision = async (agent: string) => {
      const res = await call(server.app, 'POST', '/api/v1/evaluation', { ...step('DROP TABLE users'), agent_name: agent }, REGULAR);
      expect(res.statusCode, res.body).toBe(200);
      return json(res).decision;
    };
    const createPolicy = async (body: unknown) => {
      const res = await call(server.app, 'PUT', '/api/v1/policies', body, ADMIN);
      expect(res.statusCode, res.body).toBe(201);
      return json(res) as { policy_id: number };
    };
    const labelsOf = async (agent: string) => json(await call(server.app, 'GET', `/api/v1/agents/${agent}`, undefined, REGULAR)).labels;

    describe('a regular key cannot unbind, disable or delete what a policy binds', () => {
      it('every write that would take the guard away answers 403 and changes nothing', async () => {
        const { policy_id } = await createPolicy({ name: 'pci', controls: ['block-drop'], agents: { match_labels: { pci: 'true' } } });
        expect((await register({ agent_name: 'pay', labels: { pci: 'true' } })).statusCode).toBe(201);
        expect(await decision('pay')).toBe('deny');
        const attempts: Array<[Parameters<typeof call>[1], string, unknown]> = [
          ['PATCH', '/api/v1/agents/pay', { labels: {} }],
          ['DELETE', '/api/v1/agents/pay', undefined],
          ['PATCH', `/api/v1/controls/${controlId}`, { enabled: false }],
          ['PATCH', `/api/v1/controls/${controlId}`, { name: 'renamed' }],
          ['PUT', `/api/v1/controls/${controlId}/data`, sqlControl({ enabled: false })],
          ['DELETE', `/api/v1/controls/${controlId}`, undefined],
          ['DELETE', `/api/v1/policies/${policy_id}`, undefined],
          ['PUT', `/api/v1/policies/${policy_id}`, { name: 'pci', controls: ['block-drop'], agents: { names: ['x'] } }],
          ['PUT', '/api/v1/policies', { name: 'other', controls: ['block-drop'], agents: { names: ['x'] } }],
          ['POST', '/api/v1/changes', { changes: [{ op: 'delete_policy', name: 'pci' }] }],
          ['POST', '/api/v1/changes', { changes: [{ op: 'update_control', name: 'block-drop', patch: { enabled: false } }] }],
          ['POST', '/api/v1/changes', { changes: [{ op: 'upsert_agent', agent: { agent_name: 'pay', labels: {} } }] }],
        ];
        for (const [method, url, body] of attempts) {
          const res = await call(server.app, method, url, body, REGULAR);
          expect(res.statusCode, `${method} ${url} ${JSON.stringify(body)}`).toBe(403);
        }
        expect(await labelsOf('pay')).toEqual({ pci: 'true' });
        expect(await decision('pay')).toBe('deny');
      });

      it('an admin who disables a bound control still cannot delete it, and deleting after a rename in one batch is refused', async () => {
        await createPolicy({ name: 'pci', controls: ['block-drop'], agents: { match_labels: {} } });
        expect((await register({ agent_name: 'pay' })).statusCode).toBe(201);
        expect((await call(server.app, 'PATCH', `/api/v1/controls/${controlId}`, { enabled: false }, ADMIN)).statusCode).toBe(200);
        expect((await call(server.app, 'DELETE', `/api/v1/controls/${controlId}`, undefined, ADMIN)).statusCode).toBe(409);
        const batch = await call(
          server.app,
          'POST',
          '/api/v1/changes',
          {
            changes: [
              { op: 'update_control', name: 'block-drop', patch: { name: 'gone', enabled: true } },
              { op: 'create_control', control: { name: 'block-drop', data: sqlControl({ enabled: false }) } },
              { op: 'delete_control', name: 'gone' },
            ],
          },
          ADMIN,
        );
        expect(batch.statusCode, batch.body).toBe(409);
        expect(json(batch)).toMatchObject({ change_index: 2, errors: [{ code: 'bound_by_policy' }] });
        expect(json(await call(server.app, 'GET', `/api/v1/controls/${controlId}`, undefined, ADMIN)).name).toBe('block-drop');
      });
    });

    describe('registration spellings that try to leave a policy', () => {
      beforeEach(async () => {
        await createPolicy({ name: 'pci', controls: ['block-drop'], agents: { match_labels: { pci: 'true' } } });
        await createPolicy({ name: 'no-sandbox', controls: ['block-drop'], agents: { match_expressions: [{ key: 'sandbox', operator: 'DoesNotExist' }] } });
        expect((await register({ agent_name: 'pay', labels: { pci: 'true' } })).statusCode).toBe(201);
      });

      it('duplicate keys in the raw body: the last one counts everywhere, so the escape is still refused', async () => {
        const res = await rawRegister('{"agent_name":"pay","labels":{"pci":"true","pci":"dev"}}');
        expect(res.statusCode, res.body).toBe(409);
        const twice = await rawRegister('{"agent_name":"pay","labels":{"pci":"true"},"labels":{}}');
        expect(twice.statusCode, twice.body).toBe(409);
        const names = await rawRegister('{"agent_name":"pay","agent_name":"fresh","labels":{"sandbox":"1"}}');
        expect(names.statusCode, names.body).toBe(201);
        expect(await labelsOf('pay')).toEqual({ pci: 'true' });
        expect(await decision('pay')).toBe('deny');
      });

      it('labels null, labels as an array, or a value with NUL, whitespace or a lookalike are refused, not read as "no labels"', async () => {
        const bodies: unknown[] = [
          { agent_name: 'pay', labels: null },
          { agent_name: 'pay', labels: [] },
          { agent_name: 'pay', labels: { pci: 'true\u0000' } },
          { agent_name: 'pay', labels: { pci: ' true' } },
          { agent_name: 'pay', labels: { pci: 'tru\u0435' } },
          { agent_name: 'pay', labels: { 'pci\u200b': 'true' } },
          { agent_name: 'pay', labels: { pci: 'true', constructor: 'x'.repeat(64) } },
        ];
        for (const body of bodies) {
          const res = await register(body as Record<string, unknown>);
          expect(res.statusCode, JSON.stringify(body)).toBe(422);
        }
        expect(await labelsOf('pay')).toEqual({ pci: 'true' });
        expect(await decision('pay')).toBe('deny');
      });

      it('the same agent under another spelling of its name is the same agent: the escape is refused and evaluation is guarded', async () => {
        for (const agent_name of ['PAY', ' pay ', 'Pay\t']) {
          const res = await register({ agent_name, labels: { sandbox: 'x' }, conflict_mode: 'overwrite' });
          expect(res.statusCode, `${JSON.stringify(agent_name)}: ${res.body}`).toBe(409);
          expect(await decision(agent_name)).toBe('deny');
        }
        expect(await labelsOf('pay')).toEqual({ pci: 'true' });
      });

      it('conflict_mode strict or overwrite, with metadata or steps changed alongside, cannot carry a label escape through', async () => {
        for (const conflict_mode of ['overwrite', 'strict']) {
          const res = await register({ agent_name: 'pay', conflict_mode, agent_version: '2', metadata: { labels: {} }, labels: { pci: 'false' } });
          expect(res.statusCode, res.body).toBe(409);
        }
        expect(json(await call(server.app, 'GET', '/api/v1/agents/pay', undefined, REGULAR)).agent_version ?? null).toBeNull();
        expect(await decision('pay')).toBe('deny');
      });

      it('two registrations racing to drop the label: neither gets through', async () => {
        const results = await Promise.all([
          register({ agent_name: 'pay', labels: { pci: 'false' } }),
          register({ agent_name: 'pay', labels: { sandbox: 'y', pci: 'true' } }),
          register({ agent_name: 'pay', labels: {} }),
        ]);
        expect(results.map((r) => r.statusCode)).toEqual([409, 409, 409]);
        expect(await decision('pay')).toBe('deny');
      });
    });

    describe('a policy written after the set is cached reaches the next evaluation', () => {
      it('create, widen, add a control, a new member: each reaches the next evaluation and the SDK refresh', async () => {
        expect((await register({ agent_name: 'bot', labels: { team: 'ops' } })).statusCode).toBe(201);
        expect(await decision('bot')).toBe('allow');
        const before = json(await call(server.app, 'GET', '/api/v1/agents/bot/controls', undefined, REGULAR));
        expect(before.controls).toEqual([]);
        // Created after the set was built and cached.
        const { policy_id } = await createPolicy({ name: 'p', controls: ['block-drop'], agents: { match_labels: { team: 'payments' } } });
        expect(await decision('bot')).toBe('allow');
        // Widened to select the agent.
        const widen = await call(server.app, 'PUT', `/api/v1/policies/${policy_id}`, { name: 'p', controls: ['block-drop'], agents: { match_labels: { team: 'ops' } } }, ADMIN);
        expect(widen.statusCode, widen.body).toBe(200);
        expect(await decision('bot')).toBe('deny');
        const after = json(await call(server.app, 'GET', '/api/v1/agents/bot/controls', undefined, REGULAR));
        expect(after.controls.map((c: { name: string }) => c.name)).toEqual(['block-drop']);
        expect(after.sources[String(controlId)]).toEqual(['policy:p']);
        expect(after.set_revision).toBeGreaterThan(before.set_revision);
        // A second control added to the policy after the set was rebuilt.
        const second = await call(server.app, 'PUT', '/api/v1/controls', { name: 'block-rm', data: sqlControl({ evaluator: { name: 'regex', config: { pattern: 'rm -rf' } } }) }, ADMIN);
        expect(second.statusCode).toBe(201);
        const add = await call(server.app, 'PUT', `/api/v1/policies/${policy_id}`, { name: 'p', controls: ['block-drop', 'block-rm'], agents: { match_labels: { team: 'ops' } } }, ADMIN);
        expect(add.statusCode, add.body).toBe(200);
        const res = await call(server.app, 'POST', '/api/v1/evaluation', { ...step('rm -rf /'), agent_name: 'bot' }, REGULAR);
        expect(json(res).decision).toBe('deny');
        // A newly registered agent that matches is guarded from its first evaluation.
        expect((await register({ agent_name: 'late', labels: { team: 'ops' } })).statusCode).toBe(201);
        expect(await decision('late')).toBe('deny');
      });

      it('a policy binding a control that is then renamed and re-enabled keeps guarding under the new name', async () => {
        await createPolicy({ name: 'all', controls: ['block-drop'], agents: { match_labels: {} } });
        expect((await register({ agent_name: 'bot' })).statusCode).toBe(201);
        expect(await decision('bot')).toBe('deny');
        expect((await call(server.app, 'PATCH', `/api/v1/controls/${controlId}`, { name: 'renamed' }, ADMIN)).statusCode).toBe(200);
        expect(await decision('bot')).toBe('deny');
      });
    });

    describe('NotIn and DoesNotExist with missing labels', () => {
      it('select an agent that lacks the key, whether it registered without labels or with {}; In and Exists do not', async () => {
        await createPolicy({ name: 'notin', controls: ['block-drop'], agents: { match_expressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] } });
        expect((await register({ agent_name: 'a', labels: {} })).statusCode).toBe(201);
        expect((await register({ agent_name: 'b', labels: { env: '' } })).statusCode).toBe(201);
        expect((await register({ agent_name: 'c', labels: { env: 'dev' } })).statusCode).toBe(201);
        expect(await decision('a')).toBe('deny');
        expect(await decision('b')).toBe('deny');
        expect(await decision('c')).toBe('allow');
        const { policy_id } = await createPolicy({ name: 'in', controls: ['block-drop'], agents: { match_expressions: [{ key: 'env', operator: 'In', values: ['dev'] }, { key: 'tier', operator: 'Exists' }] } });
        expect(json(await call(server.app, 'GET', `/api/v1/policies/${policy_id}`, undefined, ADMIN)).members).toEqual([]);
        // Registering with an empty-valued key against DoesNotExist is leaving: refused.
        await createPolicy({ name: 'dne', controls: ['block-drop'], agents: { match_expressions: [{ key: 'sandbox', operator: 'DoesNotExist' }] } });
        expect((await register({ agent_name: 'a', labels: { sandbox: '' } })).statusCode).toBe(409);
        expect(await decision('a')).toBe('deny');
      });
    });
  });
}
