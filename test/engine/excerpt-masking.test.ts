/**
 * guardctl issue #34 item 4: an excerpt (live stream, `tui --format json`, spans with
 * content) must not show any value a masking evaluator (pii, secrets) would find, whichever
 * control the excerpt belongs to and however many values there are.
 */
import { describe, expect, it } from 'vitest';
import { compileControls, evaluateStep } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { ControlDataSchema } from '../../src/model/index.js';
import { sensitiveExcerpt } from '../../src/evaluators/sensitive.js';
import { base62, crc32 } from '../../src/evaluators/secrets/checks.js';

const registry = createDefaultRegistry();

// Test values assembled at run time, so that no scanner takes this file for a leak.
// Random-looking bodies with GitHub's checksum (a token failing it is not reported).
const gh = (i: number) => {
  const body = `${i}aB3xK9qZ`.repeat(8).slice(0, 30);
  return `ghp_${body}${base62(crc32(body), 6)}`;
};
const AWS = `AKIA${'IOSFODNN7EXAMPLE'}`;
const STRIPE = `sk_live_${'4eC39HqLyjWDarjtT1zdp7dc'}`;
const JWT = ['eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9', 'eyJzdWIiOiIxMjM0NTY3ODkwIn0', 'dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U'].join('.');
const CARD = '4111 1111 1111 1111';
const CARD2 = '5500005555555559';
const SSN = '219-09-9999';

const control = (id: number, name: string, evaluator: unknown, path = 'input.text') => ({
  control_id: id,
  name,
  data: ControlDataSchema.parse({ selector: { path }, evaluator, action: { decision: 'deny' } }),
});

async function excerptsOf(text: unknown, controls = [control(1, 'secrets', { name: 'secrets', config: {} }), control(2, 'pii', { name: 'pii', config: {} })]) {
  const set = compileControls(controls, registry);
  const out = await evaluateStep(set, { type: 'tool', name: 't', input: { text } }, 'pre', { collectExecutions: true, excerpts: true });
  const executions = (out.executions ?? []);
  return executions.filter((x) => x.matched).map((x) => [x.control_name, x.excerpt ?? ''] as const);
}

const SECRETS = [AWS, STRIPE, JWT, ...[1, 2, 3, 4, 5, 6, 7].map(gh)];
const PERSONAL = [CARD, CARD2, SSN, 'jane.doe@example.com'];

function expectClean(excerpt: string) {
  for (const v of [...SECRETS, ...PERSONAL]) expect(excerpt).not.toContain(v);
  // No 12 characters in a row of any of them either (a partial leak).
  for (const v of [...SECRETS, ...PERSONAL]) {
    for (let i = 0; i + 12 <= v.length; i += 6) expect(excerpt, `${v.slice(i, i + 12)} in ${excerpt}`).not.toContain(v.slice(i, i + 12));
  }
}

describe('excerpts mask every value any masking evaluator finds', () => {
  it('a sixth and seventh GitHub token are masked in the secrets control excerpt', async () => {
    const text = [1, 2, 3, 4, 5, 6, 7].map(gh).join(' ');
    const excerpts = await excerptsOf(text, [control(1, 'secrets', { name: 'secrets', config: {} })]);
    expect(excerpts).toHaveLength(1);
    expectClean(excerpts[0]![1]);
  });

  it('the pii control excerpt masks AWS, GitHub and Stripe keys; the secrets one masks cards and SSNs', async () => {
    const text = `card ${CARD} key ${AWS} ssn ${SSN} ${gh(1)} ${STRIPE} ${CARD2} jwt ${JWT}`;
    const excerpts = await excerptsOf(text);
    expect(excerpts.map(([name]) => name).sort()).toEqual(['pii', 'secrets']);
    for (const [, excerpt] of excerpts) expectClean(excerpt);
  });

  it('a regex control excerpt masks secrets and personal data it did not look for', async () => {
    const text = `order 42 ${AWS} ${CARD} ${SSN}`;
    const excerpts = await excerptsOf(text, [control(1, 'orders', { name: 'regex', config: { pattern: 'order \\d+' } })]);
    expect(excerpts).toHaveLength(1);
    expectClean(excerpts[0]![1]);
    expect(excerpts[0]![1]).toContain('AKIA…MPLE');
  });

  it.each([
    ['in a JSON object', { note: `k=${AWS}`, card: CARD, nested: [{ s: SSN }] }],
    ['with a card as a JSON number', { n: 4111111111111111, ssn: SSN }],
    ['with newlines and tabs', `a\n${AWS}\t${SSN}\n${CARD}`],
    ['with many values', Array.from({ length: 40 }, (_, i) => `${gh(i % 7 + 1)} ${SSN}`).join(',')],
  ])('%s', async (_label, value) => {
    const excerpts = await excerptsOf(value, [control(1, 'any', { name: 'regex', config: { pattern: '.' } })]);
    expect(excerpts).toHaveLength(1);
    expectClean(excerpts[0]![1]);
    expect(excerpts[0]![1]).not.toContain('4111111111111111');
  });
});

describe('reveal_match and excerpts', () => {
  it('a revealing control shows what it found, and still masks what masking evaluators find', async () => {
    const data = ControlDataSchema.parse({
      selector: { path: 'input.text' },
      evaluator: { name: 'regex', config: { pattern: 'order \\d+' } },
      action: { decision: 'deny' },
      reveal_match: true,
    });
    const excerpts = await excerptsOf(`order 42 for ${AWS} ssn ${SSN}`, [{ control_id: 1, name: 'orders', data }]);
    expect(excerpts[0]![1]).toContain('order 42');
    expectClean(excerpts[0]![1]);
  });
});

describe('sensitiveExcerpt: values longer than what is scanned', () => {
  const b64 = (n: number) => Array.from({ length: n }, (_, i) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[(i * 7) % 62]).join('');

  it('a private key whose end lies far beyond the excerpt shows none of its body', () => {
    const body = Array.from({ length: 200 }, () => b64(64)).join('\n');
    const text = `key:\n-----BEGIN RSA PRIVATE KEY-----\n${body}\n-----END RSA PRIVATE KEY-----\nafter`;
    const out = sensitiveExcerpt(text, { max: 200 });
    expect(out.length).toBeLessThanOrEqual(200);
    expect(out).not.toContain(b64(64).slice(0, 12));
    expect(out.startsWith('key:\n')).toBe(true);
  });

  it('a JWT with a payload longer than the scan shows none of it', () => {
    const jwt = `${JWT.split('.')[0]}.${b64(20_000)}.${b64(43)}`;
    const out = sensitiveExcerpt(`token ${jwt} end`, { max: 200 });
    expect(out).not.toContain(b64(20).slice(0, 12));
    expect(out).toContain('token ');
  });

  it('a found text longer than the scan is masked whole', () => {
    const long = `x${b64(9_000)}`;
    const out = sensitiveExcerpt(`a ${long} b`, { max: 200, found: [long] });
    expect(out.startsWith(`a ${long.slice(0, 4)}…`)).toBe(true);
    expect(out).not.toContain(long.slice(100, 112));
  });

  it('many masked values: the excerpt still stops at its length, all masked', () => {
    const text = Array.from({ length: 500 }, (_, i) => gh((i % 7) + 1)).join(' ');
    const out = sensitiveExcerpt(text, { max: 200 });
    expect(out.length).toBeLessThanOrEqual(200);
    expect(out).not.toMatch(/ghp_[0-9]{5}/);
  });
});
