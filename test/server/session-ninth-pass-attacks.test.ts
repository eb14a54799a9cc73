/**
 * Attacks on sessions through the evaluation route (issue #37, ninth pass).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { json, seedAgentWithControl, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
});
afterEach(async () => {
  await server.close();
});

/** Sends the body as raw text, so that a `__proto__` key arrives as the agent wrote it. */
async function step(input: string, sessionId = 'run'): Promise<{ decision: string }> {
  const text = `{"agent_name":"loop-bot","stage":"pre","session_id":"${sessionId}","step":{"type":"tool","name":"fetch_url","input":${input}}}`;
  const res = await server.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: text, headers: { 'content-type': 'application/json' } });
  expect(res.statusCode, res.body).toBe(200);
  return json(res);
}

describe('repeat: the same call is the same input, `__proto__` keys included', () => {
  it('counts calls that differ only under a `__proto__` key (data, as everywhere else) as different calls', async () => {
    await seedAgentWithControl(server.app, 'loop-bot', 'break-loops', {
      scope: { step_types: ['tool'], stages: ['pre'] },
      selector: { path: 'input' },
      evaluator: { name: 'repeat', config: { max: 1, window: '10m' } },
      action: { decision: 'deny' },
    });
    expect((await step('{"__proto__":{"url":"https://a.example"}}')).decision).toBe('allow');
    // Another page, and then no input at all: neither is the call above made again.
    expect((await step('{"__proto__":{"url":"https://b.example"}}')).decision).toBe('allow');
    expect((await step('{}')).decision).toBe('allow');
    // The first call made again is a repeat.
    expect((await step('{"__proto__":{"url":"https://a.example"}}')).decision).toBe('deny');
  });
});
