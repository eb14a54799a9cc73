// What an attacker tries first against approvals, on both stores: an approval stretched to
// another step (a different spelling of the input, another agent or name), one approval used
// twice by parallel submissions, deciding without the right key or after the fact, and
// ids, reasons and long-poll timeouts nobody expects. Each attempt must fail.
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_WAIT_MS, waitMsOf } from '../../src/server/routes/approvals.js';
import { storeKinds, type StoreApp } from '../server/both-stores.js';
import { call, json } from '../server/helpers.js';
import { ADMIN, APPROVER, askLargePayments, evaluate, KEYS, payment, REGULAR, seedPayments } from './helpers.js';

const admin = { 'x-api-key': ADMIN };
const regular = { 'x-api-key': REGULAR };
const approver = { 'x-api-key': APPROVER };

/** An evaluation of a raw JSON body, as a client other than ours may send it. */
async function evaluateRaw(s: StoreApp, body: string) {
  const response = await s.app.inject({ method: 'POST', url: '/api/v1/evaluation', payload: body, headers: { 'content-type': 'application/json', ...regular } });
  expect(response.statusCode).toBe(200);
  return JSON.parse(response.body) as { decision: string; approval?: { id: string; status: string } };
}

/** Asks for `body`, approves it, and returns the approval id. */
async function approved(s: StoreApp, body: unknown): Promise<string> {
  const asked = await evaluate(s.app, body, regular);
  expect(asked.decision).toBe('ask');
  const id = asked.approval.id as string;
  expect((await call(s.app, 'POST', `/api/v1/approvals/${id}/approve`, undefined, approver)).statusCode).toBe(200);
  return id;
}

const rawPayment = (input: string, agent = 'payer') => `{"agent_name":"${agent}","stage":"pre","step":{"type":"tool","name":"pay","input":${input}}}`;

for (const kind of storeKinds()) {
  describe.skipIf(kind.skip !== null)(kind.skip ?? `approval attacks (${kind.kind})`, () => {
    afterAll(() => kind.cleanup());

    it('an approval is never used by a differently spelled input: unicode forms, whitespace, a string amount, nested values, __proto__', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const nfc = 'caf\u00e9';
        const nfd = 'cafe\u0301';
        const id = await approved(s, payment(82_000, { to: nfc, memo: { lines: [{ ref: 'a' }] } }));
        const variants = [
          rawPayment(`{"amount":82000,"to":"${nfd}","memo":{"lines":[{"ref":"a"}]}}`),
          rawPayment(`{"amount":82000,"to":"${nfc} ","memo":{"lines":[{"ref":"a"}]}}`),
          rawPayment(`{"amount":"82000","to":"${nfc}","memo":{"lines":[{"ref":"a"}]}}`),
          rawPayment(`{"amount":82000,"to":"${nfc}","memo":{"lines":[{"ref":"b"}]}}`),
          rawPayment(`{"amount":82000,"to":"${nfc}","memo":{"lines":[{"ref":"a"},{}]}}`),
          // A key JavaScript objects treat as their prototype: the digest must still see it.
          rawPayment(`{"amount":82000,"to":"${nfc}","memo":{"lines":[{"ref":"a"}]},"__proto__":{"to":"mallory"}}`),
          rawPayment(`{"amount":82000,"to":"${nfc}","memo":{"lines":[{"ref":"a"}],"__proto__":"x"}}`),
        ];
        for (const variant of variants) {
          const answer = await evaluateRaw(s, variant);
          expect(answer.decision, variant).toBe('ask');
          expect(answer.approval!.id, variant).not.toBe(id);
        }
        // Key order (nested too) and 82000.0, the same JSON number, are the same step: it runs once.
        const same = await evaluateRaw(s, rawPayment(`{"memo":{"lines":[{"ref":"a"}]},"to":"${nfc}","amount":82000.0}`));
        expect(same).toMatchObject({ decision: 'allow', approval: { id, status: 'approved' } });
        expect((await evaluate(s.app, payment(82_000, { to: nfc, memo: { lines: [{ ref: 'a' }] } }), regular)).decision).toBe('ask');
      } finally {
        await s.close();
      }
    });

    it('a number JSON cannot write (1e400 parses as Infinity) is not the null of an approved step', async () => {
      const s = await kind.open(KEYS);
      try {
        const controlId = await seedPayments(s.app, admin);
        // Every payment to anyone asks: the control looks at the payee, not the amount.
        const everyPayment = { ...askLargePayments, selector: { path: 'input.to' }, evaluator: { name: 'regex', config: { pattern: '.' } } };
        expect((await call(s.app, 'PUT', `/api/v1/controls/${controlId}/data`, { data: everyPayment }, admin)).statusCode).toBe(200);
        const id = await approved(s, { agent_name: 'payer', stage: 'pre', step: { type: 'tool', name: 'pay', input: { to: 'bob', amount: null } } });
        for (const amount of ['1e400', '-1e400']) {
          const answer = await evaluateRaw(s, rawPayment(`{"to":"bob","amount":${amount}}`));
          expect(answer.decision, amount).toBe('ask');
          expect(answer.approval!.id, amount).not.toBe(id);
        }
      } finally {
        await s.close();
      }
    });

    it("another agent, step name or stage never uses an approval; neither does the approver's or the agent's key approve another's", async () => {
      const s = await kind.open(KEYS);
      try {
        const controlId = await seedPayments(s.app, admin);
        // The same control guards a second agent, and a scope that takes two names and both stages.
        const widened = { ...askLargePayments, scope: { step_types: ['tool'], step_names: ['pay', 'pay_now'], stages: ['pre', 'post'] } };
        expect((await call(s.app, 'PUT', `/api/v1/controls/${controlId}/data`, { data: widened }, admin)).statusCode).toBe(200);
        await call(s.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'intruder' }, admin);
        expect((await call(s.app, 'POST', `/api/v1/agents/intruder/controls/${controlId}`, undefined, admin)).statusCode).toBe(200);
        const id = await approved(s, payment(82_000));
        const others = [
          { ...payment(82_000), agent_name: 'intruder' },
          { ...payment(82_000), step: { type: 'tool', name: 'pay_now', input: { amount: 82_000 } } },
          { ...payment(82_000), stage: 'post', step: { type: 'tool', name: 'pay', input: { amount: 82_000 }, output: null } },
        ];
        for (const other of others) {
          const answer = await evaluate(s.app, other, regular);
          expect(answer.decision, JSON.stringify(other)).toBe('ask');
          expect(answer.approval.id).not.toBe(id);
        }
        // The approval is still unused: the step itself runs once.
        expect((await evaluate(s.app, payment(82_000), regular)).approval).toMatchObject({ id, status: 'approved' });
      } finally {
        await s.close();
      }
    });

    it('an approved step submitted 12 times in parallel runs exactly once', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const id = await approved(s, payment(75_000));
        const answers = await Promise.all(Array.from({ length: 12 }, () => evaluate(s.app, payment(75_000), regular)));
        expect(answers.filter((a) => a.decision === 'allow').map((a) => a.approval.id)).toEqual([id]);
        const asked = answers.filter((a) => a.decision === 'ask');
        expect(asked).toHaveLength(11);
        // The others share one new question.
        expect(new Set(asked.map((a) => a.approval.id)).size).toBe(1);
        const uses = json(await call(s.app, 'GET', '/api/v1/audit?limit=50', undefined, admin)).entries.filter((e: { kind: string; op: string }) => e.kind === 'approval' && e.op === 'use');
        expect(uses).toHaveLength(1);
      } finally {
        await s.close();
      }
    });

    it('parallel approve and deny of one approval: one decision wins, the other is 409', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const id = (await evaluate(s.app, payment(60_000), regular)).approval.id as string;
        const answers = await Promise.all([
          call(s.app, 'POST', `/api/v1/approvals/${id}/approve`, undefined, approver),
          call(s.app, 'POST', `/api/v1/approvals/${id}/deny`, { reason: 'no' }, admin),
          call(s.app, 'POST', `/api/v1/approvals/${id}/approve`, undefined, admin),
        ]);
        expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 409, 409]);
        const winner = json(answers.find((a) => a.statusCode === 200)!);
        expect(json(await call(s.app, 'GET', `/api/v1/approvals/${id}`, undefined, regular)).status).toBe(winner.status);
      } finally {
        await s.close();
      }
    });

    it('an expired approval cannot be decided (409), and its step is denied, then asked anew', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const asked = await evaluate(s.app, payment(55_000), regular);
        const later = Date.parse(asked.approval.expires_at) + 1;
        // The store's own clock argument: the decision arrives after expires_at.
        const late = await s.store.decideApproval(asked.approval.id, { status: 'approved', by: 'admin:late', reason: null }, later);
        expect(late).toMatchObject({ conflict: { id: asked.approval.id, status: 'expired' } });
        const request = { digest: '', agent_name: 'payer', stage: 'pre' as const, step_type: 'tool' as const, step_name: 'pay', control_id: 1, control_name: 'large-payments', step_json: '{}', timeout_ms: 900_000, actor: 'regular:x' };
        const { approvalDigestOf } = await import('../../src/server/approval-gate.js');
        request.digest = approvalDigestOf({ agent_name: 'payer', stage: 'pre', step: { type: 'tool', name: 'pay', input: { amount: 55_000 } } });
        expect((await s.store.submitApproval(request, later)).outcome).toBe('expired');
        const anew = await s.store.submitApproval(request, later + 1);
        expect(anew.outcome).toBe('created');
        expect(anew.approval.id).not.toBe(asked.approval.id);
      } finally {
        await s.close();
      }
    });

    it('ids, reasons and wait timeouts nobody expects get precise errors and decide nothing', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const id = (await evaluate(s.app, payment(45_000), regular)).approval.id as string;
        // A NUL in a path is refused before any lookup (422), an id past the router's limit is 414; every other odd id is unknown (404).
        const expected = (bad: string) => (bad.includes('%00') ? 422 : bad.length > 1000 ? 414 : 404);
        for (const bad of ['..%2F..%2Fcontrols', `${id}%00`, `${id}%2F..`, 'apr_'.padEnd(5000, 'f'), '%E2%80%AE' + id]) {
          const decided = await call(s.app, 'POST', `/api/v1/approvals/${bad}/approve`, undefined, admin);
          expect(decided.statusCode, bad).toBe(expected(bad));
          expect(decided.body.length).toBeLessThan(1000);
          expect((await call(s.app, 'GET', `/api/v1/approvals/${bad}/wait?timeout=1s`, undefined, regular)).statusCode, bad).toBe(expected(bad));
        }
        // 1,000 characters is the limit; control characters are refused.
        expect((await call(s.app, 'POST', `/api/v1/approvals/${id}/deny`, { reason: '\u{1F600}'.repeat(1001) }, admin)).statusCode).toBe(422);
        expect((await call(s.app, 'POST', `/api/v1/approvals/${id}/deny`, { reason: 'ok\u001b[2J\u001b]0;pwned\u0007' }, admin)).statusCode).toBe(422);
        expect((await call(s.app, 'POST', `/api/v1/approvals/${id}/deny`, { reason: ['no'] }, admin)).statusCode).toBe(422);
        for (const timeout of ['0', '-1', '1e9', 'Infinity', '1h', '9999999', '30s&timeout=1s']) {
          expect((await call(s.app, 'GET', `/api/v1/approvals/${id}/wait?timeout=${timeout}`, undefined, regular)).statusCode, timeout).toBe(422);
        }
        expect(json(await call(s.app, 'GET', `/api/v1/approvals/${id}`, undefined, regular)).status).toBe('pending');
        // An absurd but well-formed timeout is held to the most a wait takes; a decision still answers it.
        expect(waitMsOf('999999m')).toBe(MAX_WAIT_MS);
        const waiting = call(s.app, 'GET', `/api/v1/approvals/${id}/wait?timeout=999999m`, undefined, regular);
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect((await call(s.app, 'POST', `/api/v1/approvals/${id}/deny`, { reason: 'multi\nline is fine' }, approver)).statusCode).toBe(200);
        expect(json(await waiting)).toMatchObject({ id, status: 'denied', reason: 'multi\nline is fine' });
      } finally {
        await s.close();
      }
    });
  });
}
