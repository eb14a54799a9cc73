/**
 * `DELETE /api/v1/agents/{agent_name}` (issue #35.9): admin only; removes the agent and its
 * links (the controls stay); recorded events and history are kept; the audit log names
 * the delete; an unknown agent is 404; an agent owned by watch mode is read-only.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, json, seedAgentWithControl, startTestServer, step, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await server.close();
});

describe('DELETE /agents/{agent_name}', () => {
  it('removes the agent and its links, keeps the controls, and is in the audit log', async () => {
    const id = await seedAgentWithControl(server.app);
    expect(json(await call(server.app, 'POST', '/api/v1/evaluation', step('DROP TABLE x'))).decision).toBe('deny');
    // Body-less, no content type: as SPEC's clients send DELETEs.
    const res = await server.app.inject({ method: 'DELETE', url: '/api/v1/agents/Support-Bot' });
    expect(res.statusCode).toBe(200);
    expect(json(res)).toEqual({ deleted: true, agent_name: 'support-bot', unlinked_controls: [id] });
    expect(await server.store.getAgent('support-bot')).toBeNull();
    expect(await server.store.listLinks()).toEqual([]);
    expect((await server.store.getControl(id))?.name).toBe('block-drop');
    expect((await call(server.app, 'GET', '/api/v1/agents/support-bot')).statusCode).toBe(404);
    // Its compiled controls are gone too: evaluating for it is an unknown agent's 404.
    const after = await call(server.app, 'POST', '/api/v1/evaluation', step('DROP TABLE x'));
    expect(after.statusCode).toBe(404);
    const audit = json(await call(server.app, 'GET', '/api/v1/audit'));
    expect(audit.entries[0]).toMatchObject({ kind: 'agent', op: 'delete', agent_name: 'support-bot', after: null });
    expect(audit.entries[0].note).toContain('block-drop');
    // The control's history is kept.
    expect(json(await call(server.app, 'GET', `/api/v1/controls/${id}/history`)).entries.length).toBeGreaterThan(0);
  });

  it('an unknown agent is 404; a second delete is 404', async () => {
    await seedAgentWithControl(server.app);
    expect((await call(server.app, 'DELETE', '/api/v1/agents/nobody')).statusCode).toBe(404);
    expect((await call(server.app, 'DELETE', '/api/v1/agents/support-bot')).statusCode).toBe(200);
    const again = await call(server.app, 'DELETE', '/api/v1/agents/support-bot');
    expect(again.statusCode).toBe(404);
    expect(json(again).error_code).toBe('not_found');
  });

  it('the agent can be registered again afterwards, with no links', async () => {
    await seedAgentWithControl(server.app);
    await call(server.app, 'DELETE', '/api/v1/agents/support-bot');
    const init = await call(server.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'support-bot' });
    expect(init.statusCode).toBe(201);
    expect(json(await call(server.app, 'GET', '/api/v1/agents/support-bot')).controls).toEqual([]);
  });

  it('needs an admin key', async () => {
    const keyed = await startTestServer({ env: { GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: 'regular-key-000001', GUARD_ADMIN_API_KEYS: 'admin-key-00000001' } });
    try {
      await keyed.store.upsertAgent({ agent_name: 'bot' });
      expect((await keyed.app.inject({ method: 'DELETE', url: '/api/v1/agents/bot' })).statusCode).toBe(401);
      expect((await keyed.app.inject({ method: 'DELETE', url: '/api/v1/agents/bot', headers: { 'x-api-key': 'regular-key-000001' } })).statusCode).toBe(403);
      expect(await keyed.store.getAgent('bot')).not.toBeNull();
      const res = await keyed.app.inject({ method: 'DELETE', url: '/api/v1/agents/bot', headers: { 'x-api-key': 'admin-key-00000001' } });
      expect(res.statusCode).toBe(200);
    } finally {
      await keyed.close();
    }
  });

  it('an agent owned by watch mode is read-only (409)', async () => {
    await server.store.upsertAgent({ agent_name: 'watched', managed_by: 'watch:controls' });
    const res = await call(server.app, 'DELETE', '/api/v1/agents/watched');
    expect(res.statusCode).toBe(409);
    expect(json(res).error_code).toBe('read_only');
    expect(await server.store.getAgent('watched')).not.toBeNull();
  });
});
