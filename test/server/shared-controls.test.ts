import { afterEach, describe, expect, it } from 'vitest';
import { call, json, seedAgentWithControl, sqlControl, startTestServer, type TestServer } from './helpers.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function stepOf(agent: string, query: string) {
  return { agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query } } };
}

async function decisionOf(app: TestServer['app'], agent: string, query: string): Promise<string> {
  const res = await call(app, 'POST', '/api/v1/evaluation', stepOf(agent, query));
  expect(res.statusCode).toBe(200);
  return json(res).decision as string;
}

describe('a control linked to several agents', () => {
  it('is compiled once for all of them, and once again after it changes', async () => {
    server = await startTestServer();
    const { app } = server;
    const id = await seedAgentWithControl(app, 'bot-a');
    await call(app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'bot-b' });
    expect((await call(app, 'POST', `/api/v1/agents/bot-b/controls/${id}`)).statusCode).toBe(200);

    expect(await decisionOf(app, 'bot-a', 'DROP TABLE users')).toBe('deny');
    expect(await decisionOf(app, 'bot-b', 'DROP TABLE users')).toBe('deny');
    const first = app.controlSets.peek('bot-a')?.controls[0];
    expect(first).toBeDefined();
    expect(app.controlSets.peek('bot-b')?.controls[0]).toBe(first);

    const pattern = '(?i)\\btruncate\\b';
    const put = await call(app, 'PUT', `/api/v1/controls/${id}/data`, {
      data: sqlControl({ evaluator: { name: 'regex', config: { pattern } } }),
    });
    expect(put.statusCode).toBe(200);

    // Both agents see the new version, which is again one compiled control.
    for (const agent of ['bot-a', 'bot-b']) {
      expect(await decisionOf(app, agent, 'DROP TABLE users')).toBe('allow');
      expect(await decisionOf(app, agent, 'truncate users')).toBe('deny');
    }
    const second = app.controlSets.peek('bot-a')?.controls[0];
    expect(second).not.toBe(first);
    expect(app.controlSets.peek('bot-b')?.controls[0]).toBe(second);
  });

  it('is not shared between two controls with the same data, and a rename rebuilds only the renamed one', async () => {
    server = await startTestServer();
    const { app } = server;
    const id = await seedAgentWithControl(app, 'bot-a', 'first');
    const other = await seedAgentWithControl(app, 'bot-b', 'second');
    await decisionOf(app, 'bot-a', 'x');
    await decisionOf(app, 'bot-b', 'x');
    // Same data, different controls: each keeps its own id and name in answers.
    const a = app.controlSets.peek('bot-a')?.controls[0];
    const b = app.controlSets.peek('bot-b')?.controls[0];
    expect(a).not.toBe(b);
    expect(a).toMatchObject({ control_id: id, name: 'first' });
    expect(b).toMatchObject({ control_id: other, name: 'second' });

    expect((await call(app, 'PATCH', `/api/v1/controls/${other}`, { name: 'renamed' })).statusCode).toBe(200);
    const res = json(await call(app, 'POST', '/api/v1/evaluation', stepOf('bot-b', 'drop table t')));
    expect(res.matches[0]).toMatchObject({ control_id: other, control_name: 'renamed' });
    expect(app.controlSets.peek('bot-a')?.controls[0]).toBe(a);
  });
});
