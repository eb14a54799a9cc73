/**
 * A control trialled in shadow mode through a policy: the per-agent shadow report must
 * list it like a linked one, or an administrator reading the report before switching it
 * to enforce sees nothing for the agents the policy guards.
 */
import { afterEach, expect, it } from 'vitest';
import { call, json, sqlControl, startTestServer, step, type TestServer } from './helpers.js';

let server: TestServer;
afterEach(async () => {
  await server.close();
});

it('the shadow report for an agent lists the shadow controls its policies bind', async () => {
  server = await startTestServer({ observability: true, env: { OBSERVABILITY_ENABLED: 'true' } });
  expect((await call(server.app, 'PUT', '/api/v1/controls', { name: 'trial-drop', data: sqlControl({ mode: 'shadow' }) })).statusCode).toBe(201);
  expect((await call(server.app, 'PUT', '/api/v1/policies', { name: 'trial', controls: ['trial-drop'], agents: { match_labels: { team: 'ops' } } })).statusCode).toBe(201);
  expect((await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'ops-bot', labels: { team: 'ops' } })).statusCode).toBe(201);
  const result = json(await call(server.app, 'POST', '/api/v1/evaluation', { ...step('DROP TABLE users'), agent_name: 'ops-bot' }));
  expect(result.decision).toBe('allow');
  expect(result.shadow_matches).toHaveLength(1);
  await server.observability!.flush();
  const all = json(await call(server.app, 'GET', '/api/v1/shadow-report?since=1h'));
  expect(all.controls).toEqual([expect.objectContaining({ control_name: 'trial-drop', would_deny: 1 })]);
  const forAgent = json(await call(server.app, 'GET', '/api/v1/shadow-report?since=1h&agent_name=ops-bot'));
  expect(forAgent.controls).toEqual([expect.objectContaining({ control_name: 'trial-drop', would_deny: 1 })]);
});
