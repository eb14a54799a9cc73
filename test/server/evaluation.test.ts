import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.js';
import type { EvaluatorDefinition } from '../../src/evaluators/types.js';
import { call, json, seedAgentWithControl, sqlControl, startTestServer, step, type TestServer } from './helpers.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Forwards every call to the real store and counts them by method name. */
function countingStore(real: Store, counts: Map<string, number>): Store {
  return new Proxy(real, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        counts.set(String(prop), (counts.get(String(prop)) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

describe('POST /api/v1/evaluation', () => {
  it('denies a matching step (200) and allows a clean one', async () => {
    server = await startTestServer();
    const id = await seedAgentWithControl(server.app);
    const deny = await call(server.app, 'POST', '/api/v1/evaluation', step('DROP TABLE users'));
    expect(deny.statusCode).toBe(200);
    expect(json(deny)).toMatchObject({ is_safe: false, decision: 'deny' });
    expect(json(deny).matches[0]).toMatchObject({ control_id: id, control_name: 'block-drop', action: 'deny' });
    const allow = await call(server.app, 'POST', '/api/v1/evaluation', step('SELECT 1'));
    expect(json(allow)).toMatchObject({ is_safe: true, decision: 'allow', matches: [] });
  });

  it('returns the steering context of a steer control', async () => {
    server = await startTestServer();
    await seedAgentWithControl(server.app, 'support-bot', 'steer-drop', sqlControl({
      action: { decision: 'steer', steering_context: { message: 'use a migration instead' } },
    }));
    const res = json(await call(server.app, 'POST', '/api/v1/evaluation', step('drop table x')));
    expect(res).toMatchObject({ decision: 'steer', steering_context: { message: 'use a migration instead' } });
  });

  // The response goes through a compiled serializer whose schema rewrites zod's nullable
  // anyOf branches: objects in those fields (metadata, steering context) must come out whole.
  it('answers evaluator metadata and steering contexts in full, and null where there are none', async () => {
    const scorer: EvaluatorDefinition = {
      name: 'scorer',
      description: 'matches with a score and nested metadata',
      configSchema: { type: 'object' },
      compile: () => () => ({ matched: true, confidence: 0.8, message: 'scored', metadata: { score: 0.8, labels: ['pii'], detail: { model: 'm1' } } }),
    };
    server = await startTestServer({ evaluators: [scorer] });
    await seedAgentWithControl(server.app, 'support-bot', 'scored', sqlControl({
      evaluator: { name: 'scorer', config: {} },
      action: { decision: 'steer', steering_context: { message: 'mask it', required_actions: ['redact'] } },
    }));
    const res = json(await call(server.app, 'POST', '/api/v1/evaluation', step('anything')));
    expect(res.steering_context).toEqual({ message: 'mask it', required_actions: ['redact'] });
    expect(res.matches[0].result).toEqual({ matched: true, confidence: 0.8, message: 'scored', metadata: { score: 0.8, labels: ['pii'], detail: { model: 'm1' } } });
    expect(res.matches[0].steering_context).toEqual({ message: 'mask it', required_actions: ['redact'] });

    await seedAgentWithControl(server.app, 'plain-bot', 'block-drop');
    const plain = json(await call(server.app, 'POST', '/api/v1/evaluation', { ...step('drop table t'), agent_name: 'plain-bot' }));
    expect(plain).toMatchObject({ decision: 'deny', steering_context: null });
    expect(plain.matches[0].result.metadata).toBeNull();
    expect(plain.matches[0]).not.toHaveProperty('steering_context');
  });

  it('answers 404 for an unknown agent and 422 for a bad request', async () => {
    server = await startTestServer();
    expect((await call(server.app, 'POST', '/api/v1/evaluation', step('x'))).statusCode).toBe(404);
    const bad = await call(server.app, 'POST', '/api/v1/evaluation', { agent_name: 'a', stage: 'during', step: { type: 'tool' } });
    expect(bad.statusCode).toBe(422);
    // A step without input is a step whose input is null (issue #35 item 2): not an error.
    expect(json(bad).errors.map((e: { field: string }) => e.field).sort()).toEqual(['stage', 'step.name']);
  });

  // The route checks bodies with a compiled JSON Schema first and falls back to zod only
  // when that fails: both must reach the same verdict, with zod's exact field paths.
  it.each([
    ['a number where a string is due (no coercion)', { step: { type: 'tool', name: 5, input: {} } }, ['step.name']],
    ['an unknown key in the step', { step: { type: 'tool', name: 'run_sql', input: {}, colour: 'red' } }, ['step.colour']],
    ['an unknown key at the top', { extra: true }, ['extra']],
    ['context that is not an object', { step: { type: 'tool', name: 'run_sql', input: {}, context: [1] } }, ['step.context']],
    ['an agent name that is not valid once normalised', { agent_name: 'bad name!' }, ['agent_name']],
  ])('answers 422 for %s', async (_case, patch, fields) => {
    server = await startTestServer();
    await seedAgentWithControl(server.app);
    const res = await call(server.app, 'POST', '/api/v1/evaluation', { ...step('DROP TABLE users'), ...patch });
    expect(res.statusCode).toBe(422);
    expect(json(res).errors.map((e: { field: string }) => e.field)).toEqual(fields);
  });

  it('checks each agent name it has not just seen: a remembered name never answers for another', async () => {
    server = await startTestServer();
    await seedAgentWithControl(server.app);
    const evaluate = (agent_name: string) => call(server!.app, 'POST', '/api/v1/evaluation', { ...step('DROP TABLE users'), agent_name });
    const statuses = [];
    for (const name of ['Support-Bot', 'Support-Bot', 'bad name!', 'bad name!', 'support-bot', 'other-bot', 'Support-Bot']) {
      statuses.push((await evaluate(name)).statusCode);
    }
    expect(statuses).toEqual([200, 200, 422, 422, 200, 404, 200]);
  });

  it('normalises the agent name on the fast path', async () => {
    server = await startTestServer();
    await seedAgentWithControl(server.app);
    const res = await call(server.app, 'POST', '/api/v1/evaluation', { ...step('DROP TABLE users'), agent_name: '  Support-Bot ' });
    expect(res.statusCode).toBe(200);
    expect(json(res).decision).toBe('deny');
  });

  it('reflects PUT data, PATCH enabled, unlink and delete immediately', async () => {
    server = await startTestServer();
    const { app } = server;
    const id = await seedAgentWithControl(app);
    const decide = async (q: string) => json(await call(app, 'POST', '/api/v1/evaluation', step(q))).decision;
    expect(await decide('drop table t')).toBe('deny');

    await call(app, 'PUT', `/api/v1/controls/${id}/data`, { data: sqlControl({ action: { decision: 'steer', steering_context: { message: 'no' } } }) });
    expect(await decide('drop table t')).toBe('steer');

    await call(app, 'PATCH', `/api/v1/controls/${id}`, { enabled: false });
    expect(await decide('drop table t')).toBe('allow');
    await call(app, 'PATCH', `/api/v1/controls/${id}`, { enabled: true });
    expect(await decide('drop table t')).toBe('steer');

    await call(app, 'DELETE', `/api/v1/agents/support-bot/controls/${id}`);
    expect(await decide('drop table t')).toBe('allow');
    await call(app, 'POST', `/api/v1/agents/support-bot/controls/${id}`);
    expect(await decide('drop table t')).toBe('steer');

    await call(app, 'DELETE', `/api/v1/controls/${id}`);
    expect(await decide('drop table t')).toBe('allow');
  });

  it('reads nothing from the store in the steady state', async () => {
    const counts = new Map<string, number>();
    server = await startTestServer({ wrapStore: (real) => countingStore(real, counts) });
    await seedAgentWithControl(server.app);
    await call(server.app, 'POST', '/api/v1/evaluation', step('warm up'));
    const before = new Map(counts);
    for (let i = 0; i < 25; i++) {
      const res = await call(server.app, 'POST', '/api/v1/evaluation', step(i % 2 ? 'drop table t' : 'select 1'));
      expect(res.statusCode).toBe(200);
    }
    expect(counts).toEqual(before);
    // A write to the agent's controls triggers exactly one rebuild.
    await call(server.app, 'PATCH', '/api/v1/agents/support-bot', { agent_version: '2' });
    const id = json(await call(server.app, 'PUT', '/api/v1/controls', { name: 'second', data: sqlControl() })).control_id;
    await call(server.app, 'POST', `/api/v1/agents/support-bot/controls/${id}`);
    const afterWrite = counts.get('agentControlSet') ?? 0;
    for (let i = 0; i < 5; i++) await call(server.app, 'POST', '/api/v1/evaluation', step('select 1'));
    expect(counts.get('agentControlSet')).toBe(afterWrite + 1);
  });

  it('hands the outcome to observability with trace ids from traceparent', async () => {
    server = await startTestServer({ observability: true, env: { OBSERVABILITY_ENABLED: 'true' } });
    await seedAgentWithControl(server.app);
    const trace = '0af7651916cd43dd8448eb211c80319c';
    const res = await call(server.app, 'POST', '/api/v1/evaluation', step('drop table t'), {
      traceparent: `00-${trace}-b7ad6b7169203331-01`,
    });
    expect(res.statusCode).toBe(200);
    const metrics = await call(server.app, 'GET', '/metrics');
    expect(metrics.body).toMatch(/guard_evaluations_total\{[^}]*decision="deny"[^}]*\} 1/);
    const query = await call(server.app, 'POST', '/api/v1/observability/events/query', { trace_id: trace });
    // Events are buffered; whatever was flushed must carry the trace id we sent.
    for (const event of json(query).events ?? []) expect(event.trace_id).toBe(trace);
  });
});
