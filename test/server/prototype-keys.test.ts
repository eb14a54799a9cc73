/**
 * Keys that made a step uncheckable (issue #34.8). A step whose input holds `__proto__`
 * or `constructor.prototype`, or nests past the JSON depth limit, was a 400 for the whole
 * evaluation, which an SDK in failMode `open` let through to the tool. Such keys are
 * ordinary data: selectors select them, evaluators see them, and no prototype changes. A
 * step nesting past the limit is denied (200, decision deny), never an error.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/server/json-body.js';
import { call, json, seedAgentWithControl, sqlControl, startTestServer, type TestServer } from './helpers.js';

let server: TestServer;
beforeEach(async () => {
  server = await startTestServer();
  await seedAgentWithControl(server.app);
});
afterEach(async () => {
  await server.close();
  // Nothing may have reached Object.prototype, whatever a test sent.
  expect(Object.getOwnPropertyNames(Object.prototype).filter((k) => ['polluted', 'role', 'query', 'isAdmin'].includes(k))).toEqual([]);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
});

/** Sends the body as raw text, exactly as an agent's JSON would arrive. */
const evaluate = (text: string) =>
  server.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: text, headers: { 'content-type': 'application/json' } });

const stepText = (input: string, extra = '') =>
  `{"agent_name":"support-bot","stage":"pre","step":{"type":"tool","name":"run_sql","input":${input}${extra}}}`;

describe('prototype keys in a step are data', () => {
  it.each([
    ['__proto__ beside the query', '{"query":"DROP TABLE users","__proto__":{}}'],
    ['__proto__ holding a polluting object', '{"query":"DROP TABLE users","__proto__":{"polluted":true}}'],
    ['constructor.prototype', '{"query":"DROP TABLE users","constructor":{"prototype":{"polluted":true}}}'],
    ['prototype at the top', '{"prototype":{"polluted":1},"query":"DROP TABLE users"}'],
    ['__proto__ spelled with a JSON escape', '{"query":"DROP TABLE users","\\u005f_proto__":{"polluted":true}}'],
    ['__proto__ nested in an array', '{"query":"DROP TABLE users","rows":[{"__proto__":{"polluted":true}}]}'],
    ['__proto__ first, query after', '{"__proto__":{"query":"select 1"},"query":"DROP TABLE users"}'],
  ])('%s: the deny control still denies', async (_what, input) => {
    const res = await evaluate(stepText(input));
    expect(res.statusCode).toBe(200);
    expect(json(res)).toMatchObject({ is_safe: false, decision: 'deny' });
  });

  it('__proto__ in context and output is evaluated too', async () => {
    const res = await evaluate(stepText('{"query":"DROP TABLE users"}', ',"context":{"__proto__":{"polluted":true}},"output":{"__proto__":{}}'));
    expect(res.statusCode).toBe(200);
    expect(json(res).decision).toBe('deny');
  });

  it('a selector can select a __proto__ or constructor key, and an evaluator sees what is in it', async () => {
    for (const [name, path] of [['proto-role', 'input.__proto__.role'], ['ctor-role', 'input.constructor.prototype.role']] as const) {
      const created = await call(server.app, 'PUT', '/api/v1/controls', {
        name,
        data: sqlControl({ selector: { path }, evaluator: { name: 'regex', config: { pattern: '^admin$' } } }),
      });
      expect(created.statusCode, created.body).toBe(201);
      await call(server.app, 'POST', `/api/v1/agents/support-bot/controls/${json(created).control_id}`);
    }
    const proto = await evaluate(stepText('{"query":"select 1","__proto__":{"role":"admin"}}'));
    expect(json(proto)).toMatchObject({ decision: 'deny', matches: [{ control_name: 'proto-role' }] });
    const ctor = await evaluate(stepText('{"query":"select 1","constructor":{"prototype":{"role":"admin"}}}'));
    expect(json(ctor)).toMatchObject({ decision: 'deny', matches: [{ control_name: 'ctor-role' }] });
    // A plain object has no own constructor: the selector finds nothing, never Object's.
    const plain = await evaluate(stepText('{"query":"select 1"}'));
    expect(json(plain).decision).toBe('allow');
  });

  it('a whole-input regex sees the keys', async () => {
    const created = await call(server.app, 'PUT', '/api/v1/controls', {
      name: 'no-proto',
      data: sqlControl({ selector: { path: 'input' }, evaluator: { name: 'regex', config: { pattern: '__proto__' } } }),
    });
    await call(server.app, 'POST', `/api/v1/agents/support-bot/controls/${json(created).control_id}`);
    const res = await evaluate(stepText('{"query":"select 1","__proto__":{"x":1}}'));
    expect(json(res)).toMatchObject({ decision: 'deny', matches: [{ control_name: 'no-proto' }] });
  });
});

describe('steps nesting past the limit', () => {
  const deep = (levels: number) => `${'{"a":'.repeat(levels)}"DROP TABLE users"${'}'.repeat(levels)}`;

  it.each([
    ['in the input', (d: string) => stepText(`{"query":"select 1","nested":${d}}`)],
    ['in the output', (d: string) => stepText('{"query":"select 1"}', `,"output":${d}`)],
    ['in the context', (d: string) => stepText('{"query":"select 1"}', `,"context":{"n":${d}}`)],
    ['as arrays', (_d: string) => stepText(`{"query":"select 1","n":${'['.repeat(MAX_JSON_DEPTH + 5)}${']'.repeat(MAX_JSON_DEPTH + 5)}}`)],
    ['far past it (100,000 levels)', (_d: string) => stepText(`{"query":"select 1","n":${'['.repeat(100_000)}${']'.repeat(100_000)}}`)],
  ])('%s: answered 200 with decision deny naming the limit', async (_where, body) => {
    const res = await evaluate(body(deep(MAX_JSON_DEPTH + 1)));
    expect(res.statusCode).toBe(200);
    const result = json(res);
    expect(result).toMatchObject({ is_safe: false, decision: 'deny' });
    expect(JSON.stringify(result.matches)).toContain(String(MAX_JSON_DEPTH));
  });

  it('a step at the limit is evaluated as usual', async () => {
    // The envelope (body, step, input) takes 3 levels of the limit.
    const res = await evaluate(stepText(`{"query":"select 1","n":${deep(MAX_JSON_DEPTH - 4)}}`));
    expect(res.statusCode).toBe(200);
    expect(json(res).decision).toBe('allow');
  });

  it('other routes still refuse bodies nested past the limit (400)', async () => {
    const res = await server.app.inject({ method: 'PUT', url: '/api/v1/controls', payload: `{"name":"x","data":${deep(MAX_JSON_DEPTH + 1)}}`, headers: { 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(400);
    expect(json(res).error_code).toBe('malformed_json');
  });
});

describe('prototype keys on other routes', () => {
  it('control data with a __proto__ key is refused as an unknown field or stored without touching prototypes', async () => {
    const res = await server.app.inject({
      method: 'PUT',
      url: '/api/v1/controls',
      payload: `{"name":"p","data":${JSON.stringify(sqlControl()).replace(/^\{/, '{"__proto__":{"polluted":true},')}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect([201, 422]).toContain(res.statusCode);
  });

  it('event ingest with __proto__ keys does not fail the batch', async () => {
    const res = await server.app.inject({
      method: 'POST',
      url: '/api/v1/agents/initAgent',
      payload: '{"agent_name":"x","metadata":{"__proto__":{"polluted":true},"team":"a"}}',
      headers: { 'content-type': 'application/json' },
    });
    expect([200, 201, 422]).toContain(res.statusCode);
  });
});

describe('the recorder’s redaction copies __proto__ keys as keys', () => {
  it('keeps the key and its value, and the copy has no prototype to replace', async () => {
    const { createRedactor } = await import('../../src/recording/redact.js');
    const copy = createRedactor([]).redact(JSON.parse('{"q":"x","__proto__":{"polluted":"yes"}}')) as Record<string, unknown>;
    expect(Object.hasOwn(copy, '__proto__')).toBe(true);
    expect(JSON.stringify(copy)).toBe('{"q":"x","__proto__":{"polluted":"yes"}}');
    expect(copy.polluted).toBeUndefined();
  });
});
