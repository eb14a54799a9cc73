/**
 * Attacks on sessions through the evaluation route (issue #37, tenth pass): approvals and
 * session labels.
 */
import type { ControlDataInput } from '../../src/model/index.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { call, json, seedAgentWithControl, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await server.close();
});

const mark = (name: string, label: string): ControlDataInput => ({
  scope: { step_types: ['tool'], step_names: [name], stages: ['post'] },
  selector: { path: 'name' },
  evaluator: { name: 'regex', config: { pattern: '.' } },
  action: { decision: 'log', session_labels: [label] },
});

async function evaluate(sessionId: string, stage: 'pre' | 'post', name: string, input: unknown = {}) {
  const res = await call(server.app, 'POST', '/api/v1/evaluation', { agent_name: 'mail-bot', stage, session_id: sessionId, step: { type: 'tool', name, input } });
  expect(res.statusCode, res.body).toBe(200);
  return json(res) as { decision: string; approval?: { id: string }; session: { labels: string[] } };
}

describe('an approval and the session of the step it allows', () => {
  it('an approved step allows only what its own session asks for: a deny that needs the other session\'s labels still decides', async () => {
    await seedAgentWithControl(server.app, 'mail-bot', 'mark-untrusted', mark('fetch_url', 'untrusted_content'));
    await seedAgentWithControl(server.app, 'mail-bot', 'mark-private', mark('read_customer', 'private_data'));
    await seedAgentWithControl(server.app, 'mail-bot', 'ask-after-untrusted', {
      scope: { step_types: ['tool'], step_names: ['send_email'], stages: ['pre'], session_labels: ['untrusted_content'] },
      selector: { path: 'name' },
      evaluator: { name: 'regex', config: { pattern: '.' } },
      action: { decision: 'ask' },
    });
    await seedAgentWithControl(server.app, 'mail-bot', 'deny-exfiltration', {
      scope: { step_types: ['tool'], step_names: ['send_email'], stages: ['pre'], session_labels: ['untrusted_content', 'private_data'] },
      selector: { path: 'name' },
      evaluator: { name: 'regex', config: { pattern: '.' } },
      action: { decision: 'deny' },
    });
    const email = { to: 'x@evil.example', body: 'hello' };
    // Session a read a web page only: its email asks, and a person approves it.
    await evaluate('a', 'post', 'fetch_url');
    const asked = await evaluate('a', 'pre', 'send_email', email);
    expect(asked.decision).toBe('ask');
    const approved = await call(server.app, 'POST', `/api/v1/approvals/${asked.approval!.id}/approve`, {});
    expect(approved.statusCode, approved.body).toBe(200);
    // Session b also read a customer: the very same email is denied, and uses no approval.
    await evaluate('b', 'post', 'fetch_url');
    await evaluate('b', 'post', 'read_customer');
    expect((await evaluate('b', 'pre', 'send_email', email)).decision).toBe('deny');
    // Session a sends its approved email, once.
    expect((await evaluate('a', 'pre', 'send_email', email)).decision).toBe('allow');
    expect((await evaluate('a', 'pre', 'send_email', email)).decision).toBe('ask');
  });
});
