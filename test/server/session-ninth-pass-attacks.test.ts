/**
 * Attacks on sessions through the evaluation route (issue #37, ninth pass).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EvaluatorDefinition } from '../../src/evaluators/types.js';
import { call, json, seedAgentWithControl, startTestServer, type TestServer } from './helpers.js';

/** An evaluator whose check always fails, as a remote scorer's does when it times out. */
const failing: EvaluatorDefinition = {
  name: 'unreachable_scorer',
  description: 'fails every check',
  configSchema: { type: 'object' },
  compile: () => () => {
    throw new Error('the scorer did not answer');
  },
};

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer({ evaluators: [failing] });
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

describe('a control that adds labels, when its evaluator fails', () => {
  const evaluate = async (name: string, stage: 'pre' | 'post') => {
    const res = await call(server.app, 'POST', '/api/v1/evaluation', { agent_name: 'mail-bot', stage, session_id: 'run', step: { type: 'tool', name, input: {} } });
    expect(res.statusCode, res.body).toBe(200);
    return json(res) as { decision: string; session: { labels: string[] } };
  };

  it('adds its labels by default (fails closed), so the deny that needs them still decides', async () => {
    await seedAgentWithControl(server.app, 'mail-bot', 'mark-untrusted', {
      scope: { step_types: ['tool'], step_names: ['fetch_url'], stages: ['post'] },
      selector: { path: 'name' },
      evaluator: { name: 'unreachable_scorer', config: {} },
      action: { decision: 'log', session_labels: ['untrusted_content'] },
    });
    await seedAgentWithControl(server.app, 'mail-bot', 'deny-after-untrusted', {
      scope: { step_types: ['tool'], step_names: ['send_email'], stages: ['pre'], session_labels: ['untrusted_content'] },
      selector: { path: 'name' },
      evaluator: { name: 'regex', config: { pattern: '.' } },
      action: { decision: 'deny' },
    });
    const read = await evaluate('fetch_url', 'post');
    expect(read.decision).toBe('allow');
    expect(read.session.labels).toEqual(['untrusted_content']);
    expect((await evaluate('send_email', 'pre')).decision).toBe('deny');
  });
});

