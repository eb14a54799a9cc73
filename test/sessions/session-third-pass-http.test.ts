/**
 * Attacks on the session routes over HTTP (issue #37, third pass): session ids that a
 * URL path mangles, the longest valid ids, and who may learn that a session exists.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ControlDataInput } from '../../src/model/index.js';
import { call, json, startTestServer, type TestServer } from '../server/helpers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function start(env: Record<string, string> = {}): Promise<TestServer> {
  const s = await startTestServer({ env });
  servers.push(s);
  return s;
}

const MARK: ControlDataInput = {
  scope: { step_types: ['tool'], step_names: ['fetch_url'], stages: ['post'] },
  selector: { path: 'name' },
  evaluator: { name: 'regex', config: { pattern: '.' } },
  action: { decision: 'log', session_labels: ['untrusted_content'] },
};

async function seed(s: TestServer, headers: Record<string, string> = {}): Promise<void> {
  await s.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: 'mail-bot' }, headers });
  const created = await s.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: { name: 'mark-untrusted', data: MARK }, headers });
  expect(created.statusCode, created.body).toBe(201);
  const linked = await s.app.inject({ method: 'POST', url: `/api/v1/agents/mail-bot/controls/${json(created).control_id}`, payload: {}, headers });
  expect(linked.statusCode, linked.body).toBe(200);
}

async function mark(s: TestServer, id: string, headers: Record<string, string> = {}): Promise<void> {
  const res = await s.app.inject({
    method: 'POST',
    url: '/api/v1/evaluation',
    payload: { agent_name: 'mail-bot', stage: 'post', session_id: id, step: { type: 'tool', name: 'fetch_url', input: {} } },
    headers,
  });
  expect(res.statusCode, res.body).toBe(200);
  expect(json(res).session).toEqual({ id, labels: ['untrusted_content'] });
}

describe('GET /sessions/{id}: ids a path carries', () => {
  it('reads back every valid id, percent-encoded, as the session it names and no other', async () => {
    const s = await start();
    await seed(s);
    const ids = ['a/b', 'a?b', 'a#b', '%41', 'a b', 'a%2Fb', '中'.repeat(128), '🙂'.repeat(64)];
    for (const id of ids) await mark(s, id);
    for (const id of ids) {
      const res = await call(s.app, 'GET', `/api/v1/sessions/${encodeURIComponent(id)}?agent_name=mail-bot`);
      expect({ id: id.slice(0, 12), status: res.statusCode }).toEqual({ id: id.slice(0, 12), status: 200 });
      expect(json(res).session_id).toBe(id);
    }
    // 'A' is not the session '%41', nor 'a/b' the session 'a%2Fb'.
    expect((await call(s.app, 'GET', '/api/v1/sessions/A?agent_name=mail-bot')).statusCode).toBe(404);
  });
});

const DENY: ControlDataInput = {
  scope: { step_types: ['tool'], step_names: ['send_email'], stages: ['pre'], session_labels: ['untrusted_content'] },
  selector: { path: 'name' },
  evaluator: { name: 'regex', config: { pattern: '.' } },
  action: { decision: 'deny', message: 'untrusted content in this session' },
};

async function create(s: TestServer, name: string, data: ControlDataInput): Promise<number> {
  const created = await call(s.app, 'PUT', '/api/v1/controls', { name, data });
  expect(created.statusCode, created.body).toBe(201);
  return json(created).control_id as number;
}

async function send(s: TestServer, id: string): Promise<{ decision: string; session?: { labels: string[] } }> {
  const res = await call(s.app, 'POST', '/api/v1/evaluation', { agent_name: 'mail-bot', stage: 'pre', session_id: id, step: { type: 'tool', name: 'send_email', input: {} } });
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
}

async function fetchUrl(s: TestServer, id: string): Promise<{ session?: { labels: string[] } }> {
  const res = await call(s.app, 'POST', '/api/v1/evaluation', { agent_name: 'mail-bot', stage: 'post', session_id: id, step: { type: 'tool', name: 'fetch_url', input: {} } });
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
}

describe('labels and requirements as controls change mid-session', () => {
  it('policy-bound controls add and require labels; a label outlives its adder being disabled or unlinked, and its requirer being unlinked and linked again', async () => {
    const s = await start();
    await call(s.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'mail-bot' });
    const markId = await create(s, 'mark-untrusted', MARK);
    await create(s, 'deny-after-untrusted', DENY);
    const policy = await call(s.app, 'PUT', '/api/v1/policies', { name: 'baseline', controls: ['mark-untrusted', 'deny-after-untrusted'], agents: { names: ['mail-bot'] } });
    expect(policy.statusCode, policy.body).toBe(201);
    expect((await fetchUrl(s, 'run')).session).toEqual({ id: 'run', labels: ['untrusted_content'] });
    expect((await send(s, 'run')).decision).toBe('deny');
    // The adder disabled: no new session is marked, the marked one still denies.
    expect((await call(s.app, 'PATCH', `/api/v1/controls/${markId}`, { enabled: false })).statusCode).toBe(200);
    expect((await fetchUrl(s, 'later')).session).toEqual({ id: 'later', labels: [] });
    expect((await send(s, 'later')).decision).toBe('allow');
    expect((await send(s, 'run')).decision).toBe('deny');
    // The policy gone, the agent has no session-aware control: its session_id is ignored.
    const policyId = json(policy).policy_id as number;
    expect((await call(s.app, 'DELETE', `/api/v1/policies/${policyId}`)).statusCode).toBe(200);
    expect((await send(s, 'run')).session).toBeUndefined();
    // The requirer linked again: the label kept while it was away decides.
    const denyId = json(await call(s.app, 'GET', '/api/v1/controls?name=deny-after-untrusted')).controls[0].control_id as number;
    expect((await call(s.app, 'POST', `/api/v1/agents/mail-bot/controls/${denyId}`, {})).statusCode).toBe(200);
    expect((await send(s, 'run')).decision).toBe('deny');
    expect((await send(s, 'later')).decision).toBe('allow');
  });
});

describe('GET /sessions/{id}: who learns that a session exists', () => {
  it('without a key, or with an approver key, a held session and an unknown one answer alike', async () => {
    const admin = 'admin-key-0123456789abcdef';
    const approver = 'approver-key-0123456789abcdef';
    const s = await start({ GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: admin, GUARD_APPROVER_API_KEYS: approver });
    const auth = { 'x-api-key': admin };
    await seed(s, auth);
    await mark(s, 'held', auth);
    for (const headers of [{}, { 'x-api-key': approver }, { 'x-api-key': 'wrong-key-0123456789abcdef' }]) {
      const held = await s.app.inject({ method: 'GET', url: '/api/v1/sessions/held?agent_name=mail-bot', headers });
      const unknown = await s.app.inject({ method: 'GET', url: '/api/v1/sessions/unknown?agent_name=mail-bot', headers });
      expect(held.statusCode).toBeGreaterThanOrEqual(401);
      expect(held.statusCode).toBeLessThanOrEqual(403);
      expect([unknown.statusCode, unknown.body]).toEqual([held.statusCode, held.body]);
    }
    expect((await s.app.inject({ method: 'GET', url: '/api/v1/sessions/held?agent_name=mail-bot', headers: auth })).statusCode).toBe(200);
  });
});
