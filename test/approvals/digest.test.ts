// What an approval is bound to: the spellings an agent might try to reuse another step's
// approval with are other digests; only key order (the same JSON value) is not.
import { describe, expect, it } from 'vitest';
import { approvalDigestOf, type GateRequest } from '../../src/server/approval-gate.js';

const base: GateRequest = { agent_name: 'payer', stage: 'pre', step: { type: 'tool', name: 'pay', input: { amount: 82_000, to: 'acme' } } };
const digest = (change: (r: GateRequest) => GateRequest) => approvalDigestOf(change(structuredClone(base)));

describe('approval digest', () => {
  it('is the same for the same step, whatever the key order', () => {
    expect(digest((r) => ({ ...r, step: { ...r.step, input: { to: 'acme', amount: 82_000 } } }))).toBe(approvalDigestOf(base));
    // Context is not part of the step a person approves.
    expect(digest((r) => ({ ...r, step: { ...r.step, context: { user: 'x' } } }))).toBe(approvalDigestOf(base));
  });

  it('differs for every other difference', () => {
    const variants: Array<(r: GateRequest) => GateRequest> = [
      (r) => ({ ...r, agent_name: 'other' }),
      (r) => ({ ...r, stage: 'post' }),
      (r) => ({ ...r, step: { ...r.step, type: 'llm' } }),
      (r) => ({ ...r, step: { ...r.step, name: 'pay ' } }),
      (r) => ({ ...r, step: { ...r.step, input: { amount: 820_000, to: 'acme' } } }),
      (r) => ({ ...r, step: { ...r.step, input: { amount: '82000', to: 'acme' } } }),
      (r) => ({ ...r, step: { ...r.step, input: { amount: 82_000, to: 'acme', memo: '' } } }),
      (r) => ({ ...r, step: { ...r.step, input: [82_000, 'acme'] } }),
      (r) => ({ ...r, step: { ...r.step, input: null } }),
    ];
    const seen = new Set([approvalDigestOf(base), ...variants.map(digest)]);
    expect(seen.size).toBe(variants.length + 1);
  });

  it('binds the output at post', () => {
    const post: GateRequest = { ...base, stage: 'post', step: { ...base.step, output: { ok: true } } };
    expect(approvalDigestOf(post)).not.toBe(approvalDigestOf({ ...post, step: { ...post.step, output: { ok: false } } }));
    // At pre an output is not part of the step yet.
    expect(approvalDigestOf({ ...base, step: { ...base.step, output: 1 } })).toBe(approvalDigestOf(base));
  });
});
