/**
 * guardctl issue #34 item 3: one json control on a hostile step held the event loop (and
 * /health) for tens of seconds. The json evaluator's work is bounded off the loop
 * (evaluators/json/validate-pool.ts): a real server on 127.0.0.1 answers /health while
 * the worst schemas ajv allows are being evaluated, and each hostile evaluation ends in
 * an evaluator error that on_error decides (deny controls fail closed by default).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EvaluationResult } from '../../src/model/index.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
let base = '';

beforeAll(async () => {
  // A body limit that lets the heaviest case be heavy enough that no machine finishes it within JSON_TIMEOUT_MS.
  server = await startTestServer({ env: { OBSERVABILITY_ENABLED: 'false', GUARD_BODY_LIMIT_BYTES: String(8 * 1024 * 1024) }, listen: true });
  base = server.url;
});
afterAll(async () => {
  await server.close();
});

async function send(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json() };
}

/** `$defs` d0..d{n-1}, each `keyword` over two refs to the next: 2^n paths for ajv, an acyclic schema. */
function refLadder(n: number, keyword: 'anyOf' | 'allOf'): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < n; i++) defs[`d${i}`] = { [keyword]: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  defs[`d${n}`] = { type: 'string', maxLength: 0 };
  return { $defs: defs, $ref: '#/$defs/d0' };
}

/** `{a: {a: ... leaf}}`, `levels` deep. */
function nested(levels: number, leaf: unknown): unknown {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

const manyPatterns = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`^k${i}x`, { type: 'string' }]));
const manyKeys = Object.fromEntries(Array.from({ length: 40_000 }, (_, i) => [`k${i}`, i]));

/** [name, schema, step input] for the worst schemas ajv accepts. */
const HOSTILE: Array<[string, Record<string, unknown>, unknown]> = [
  // The case: 530 KB of distinct one-item arrays (sent as JSON text), compared pairwise.
  ['uniqueItems on one-item arrays', { type: 'array', uniqueItems: true }, JSON.stringify(Array.from({ length: 60_000 }, (_, i) => [i]))],
  ['uniqueItems on objects', { type: 'array', uniqueItems: true }, Array.from({ length: 40_000 }, (_, i) => ({ k: i, v: [i] }))],
  ['an anyOf ladder of $refs on a one-digit value', refLadder(40, 'anyOf'), 1],
  ['an allOf ladder of $refs on a one-digit value', refLadder(40, 'allOf'), 1],
  [
    'anyOf recursion through $ref on nested arrays',
    { $defs: { a: { anyOf: [{ type: 'array', items: { $ref: '#/$defs/a' } }, { type: 'array', items: { $ref: '#/$defs/a' } }] } }, $ref: '#/$defs/a', not: {} },
    JSON.parse(`${'['.repeat(60)}${']'.repeat(60)}`) as unknown,
  ],
  [
    'contains with minContains over arrays of distinct items',
    { type: 'array', contains: { type: 'array', uniqueItems: true, contains: { const: -1 } }, minContains: 2 },
    Array.from({ length: 4 }, (_, j) => Array.from({ length: 30_000 }, (_, i) => i * 7 + j)),
  ],
  ['patternProperties with many patterns on many keys', { type: 'object', patternProperties: manyPatterns, maxProperties: 1 }, manyKeys],
  [
    'a huge enum of deep objects',
    { type: 'array', items: { enum: Array.from({ length: 500 }, (_, i) => nested(60, i)) } },
    // 6,000 x 500 deep comparisons of 60 levels (2.5 MB): seconds past the timeout on any machine, so the answer is the timeout's error, never a plain match.
    Array.from({ length: 6_000 }, () => nested(60, -1)),
  ],
];

describe('a hostile json evaluation', () => {
  it.each(HOSTILE)('%s: /health answers while it runs; the deny control fails closed with an evaluator error', async (label, schema, input) => {
    const agent = `bot-${label.replace(/\W+/g, '-').toLowerCase()}`;
    const created = await send('PUT', '/controls', {
      name: `json-${agent}`,
      data: {
        scope: { step_types: ['tool'], stages: ['pre'] },
        selector: { path: 'input.value' },
        evaluator: { name: 'json', config: { schema } },
        action: { decision: 'deny' },
      },
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const id = (created.json as { control_id: number }).control_id;
    expect((await send('POST', '/agents/initAgent', { agent_name: agent })).status).toBeLessThan(300);
    expect((await send('POST', `/agents/${agent}/controls/${id}`)).status).toBeLessThan(300);

    const order: string[] = [];
    const hostile = send('POST', '/evaluation', { agent_name: agent, stage: 'pre', step: { type: 'tool', name: 't', input: { value: input } } }).then(
      (r) => (order.push('hostile'), r),
    );
    // /health is asked repeatedly until one answer came while the evaluation was still
    // in flight: a loop held by the evaluation would answer only after it.
    await expect
      .poll(
        async () => {
          await fetch(`${base}/health`);
          if (!order.includes('hostile')) order.push('health');
          return order;
        },
        { timeout: 60_000, interval: 20 },
      )
      .toContain('health');
    const answer = await hostile;
    expect(order.indexOf('health')).toBeLessThan(order.indexOf('hostile'));
    expect(answer.status).toBe(200);
    const result = answer.json as EvaluationResult;
    expect(result.decision).toBe('deny');
    expect(result.matches[0]?.control_id).toBe(id);
    expect(result.matches[0]?.error).toMatch(/json/i);
  }, 120_000);
});
