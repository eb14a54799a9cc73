/**
 * A match's message and metadata never echo a guarded value (docs/security.md): json
 * failing paths built from object keys, sql identifiers (decoded, lowercased) and evaluator
 * errors are masked by the same scanners as excerpts, unless the control has reveal_match.
 */
import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { ControlDataSchema } from '../../src/model/index.js';

const registry = createDefaultRegistry();

// Assembled at run time, so that no scanner takes this file for a leak.
const AWS = `AKIA${'IOSFODNN7EXAMPLE'}`;
const STRIPE = `sk_live_${'4eC39HqLyjWDarjtT1zdp7dc'}`;
const CARD = `4111${'111111111111'}`;
const PASSWORD = `password=${'Xk9#pL2mQ7vR'}`;
const LEAKS = [AWS, AWS.toLowerCase(), STRIPE, CARD, 'Xk9#pL2mQ7vR'];

const control = (id: number, evaluator: unknown, path: string, reveal = false) => ({
  control_id: id,
  name: `c${id}`,
  data: ControlDataSchema.parse({ selector: { path }, evaluator: { ...(evaluator as object), ...(reveal ? {} : {}) }, action: { decision: 'deny' }, ...(reveal ? { reveal_match: true } : {}) }),
});

const jsonControl = (reveal = false) =>
  control(1, { name: 'json', config: { schema: { type: 'object', properties: { environment: { type: 'string' } }, additionalProperties: false } } }, 'input', reveal);

async function matchesOf(controls: ReturnType<typeof control>[], input: unknown) {
  const set = compileControls(controls, registry);
  const out = await evaluateStep(set, { type: 'tool', name: 't', input }, 'pre', { collectExecutions: true, excerpts: true });
  return out;
}

function expectClean(out: unknown) {
  const text = JSON.stringify(out);
  for (const v of LEAKS) expect(text, `${v} in ${text}`).not.toContain(v);
}

describe('messages and metadata mask guarded values', () => {
  it('json: unknown keys that are card numbers or secrets are masked in message and failing_paths', async () => {
    const input = { environment: 'prod', [CARD]: 1, [AWS]: 'x', [STRIPE]: 2, [PASSWORD]: 3 };
    const out = await matchesOf([jsonControl()], input);
    expect((out.result.matches ?? []).length).toBeGreaterThan(0);
    expectClean(out);
    expect(JSON.stringify(out)).toContain('4111…1111');
  });

  it('json: nested keys and keys inside arrays are masked too', async () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'object', additionalProperties: false }, list: { type: 'array', items: { type: 'object', additionalProperties: false } } },
    };
    const c = control(1, { name: 'json', config: { schema } }, 'input');
    const out = await matchesOf([c], { a: { [CARD]: 1 }, list: [{ [AWS]: 1 }, { [STRIPE]: 1 }] });
    expect((out.result.matches ?? []).length).toBeGreaterThan(0);
    expectClean(out);
  });

  it('json with reveal_match shows the key in full', async () => {
    const out = await matchesOf([jsonControl(true)], { environment: 'prod', [CARD]: 1 });
    expect(JSON.stringify(out.result.matches)).toContain(CARD);
  });

  it('sql: a table named like a card number or a key is masked, decoded and lowercased forms too', async () => {
    const c = control(2, { name: 'sql', config: { allowed_tables: ['orders'] } }, 'input.query');
    for (const query of [
      `SELECT * FROM "${CARD}"`,
      `SELECT * FROM ${AWS}`,
      `SELECT * FROM "${AWS}"`,
      `SELECT * FROM U&"\\0041KIA${'IOSFODNN7EXAMPLE'}"`,
      `SELECT * FROM "${STRIPE}"`,
      `SELECT * FROM orders JOIN "${CARD}" ON true`,
    ]) {
      const out = await matchesOf([c], { query });
      expect((out.result.matches ?? []).length, query).toBeGreaterThan(0);
      expectClean(out);
    }
  });
});
