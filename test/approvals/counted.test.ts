// An approved step beside counting controls (rate, budget, repeat), on both stores: the
// step that asked was counted then; submitted again on its approval it is the same step,
// counted once. The bypasses: resubmissions in parallel, and a resubmission that no ask
// control matches any more, must each count as any other step does.
import { afterAll, describe, expect, it } from 'vitest';
import { storeKinds } from '../server/both-stores.js';
import { call, json } from '../server/helpers.js';
import { startTestServer } from '../support/server.js';
import type { Store } from '../../src/store/types.js';
import { ADMIN, APPROVER, approve, evaluate, KEYS, linkToPayer, payment, paymentInSession, payScope, REGULAR, seedPayments } from './helpers.js';

const admin = { 'x-api-key': ADMIN };
const regular = { 'x-api-key': REGULAR };
const approver = { 'x-api-key': APPROVER };




for (const kind of storeKinds()) {
  describe.skipIf(kind.skip !== null)(kind.skip ?? `approved steps beside counting controls (${kind.kind})`, () => {
    afterAll(() => kind.cleanup());

    it('repeat {max: 1}: the approved step runs once, and the same step once more is the repeat', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'no-double-pay', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'repeat', config: { max: 1, window: '1h' } }, action: { decision: 'deny' } });
        const asked = await evaluate(s.app, paymentInSession(82_000), regular);
        expect(asked).toMatchObject({ decision: 'ask', approval: { status: 'pending' } });
        await approve(s.app, asked.approval.id);
        const runs = await evaluate(s.app, paymentInSession(82_000), regular);
        expect(runs).toMatchObject({ decision: 'allow', is_safe: true, approval: { id: asked.approval.id, status: 'approved' } });
        const again = await evaluate(s.app, paymentInSession(82_000), regular);
        expect(again.decision).toBe('deny');
        expect(again.matches.map((m: { control_name: string }) => m.control_name)).toContain('no-double-pay');
      } finally {
        await s.close();
      }
    });

    it('budget: the approved payment spends its amount once', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'daily-budget', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'budget', config: { max: 100_000, window: '24h', amount: 'input.amount' } }, action: { decision: 'deny' } });
        const asked = await evaluate(s.app, payment(82_000), regular);
        expect(asked.decision).toBe('ask');
        await approve(s.app, asked.approval.id);
        expect((await evaluate(s.app, payment(82_000), regular)).decision).toBe('allow');
        // 82,000 spent, not 164,000: 18,000 is left, and no more.
        expect((await evaluate(s.app, payment(9_000), regular)).decision).toBe('allow');
        expect((await evaluate(s.app, payment(9_000), regular)).decision).toBe('allow');
        expect((await evaluate(s.app, payment(1), regular)).decision).toBe('deny');
      } finally {
        await s.close();
      }
    });

    it('rate: the approved step is one step of the window', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'three-payments', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'rate', config: { limit: 3, window: '1h' } }, action: { decision: 'deny' } });
        const asked = await evaluate(s.app, payment(50_000), regular);
        await approve(s.app, asked.approval.id);
        expect((await evaluate(s.app, payment(50_000), regular)).decision).toBe('allow');
        expect((await evaluate(s.app, payment(10), regular)).decision).toBe('allow');
        expect((await evaluate(s.app, payment(20), regular)).decision).toBe('allow');
        expect((await evaluate(s.app, payment(30), regular)).decision).toBe('deny');
      } finally {
        await s.close();
      }
    });

    it('12 parallel resubmissions: at most one runs, on the approval, uncounted; every other one counts and is refused', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'no-double-pay', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'repeat', config: { max: 1, window: '1h' } }, action: { decision: 'deny' } });
        const asked = await evaluate(s.app, paymentInSession(75_000), regular);
        await approve(s.app, asked.approval.id);
        const answers = await Promise.all(Array.from({ length: 12 }, () => evaluate(s.app, paymentInSession(75_000), regular)));
        // One runs on the approval, or none: a parallel submission's count can land before the
        // approved one is checked, which then meets a repeat and is denied (closed, never open).
        const allowed = answers.filter((a) => a.decision === 'allow');
        expect(allowed.length).toBeLessThanOrEqual(1);
        expect(allowed.every((a) => a.approval?.id === asked.approval.id)).toBe(true);
        expect(answers.filter((a) => a.decision === 'deny')).toHaveLength(12 - allowed.length);
        const uses = json(await call(s.app, 'GET', '/api/v1/audit?limit=50', undefined, admin)).entries.filter((e: { kind: string; op: string }) => e.kind === 'approval' && e.op === 'use');
        expect(uses).toHaveLength(1);
      } finally {
        await s.close();
      }
    });

    it('a resubmission no ask control matches any more uses the approval: the step after it counts', async () => {
      const s = await kind.open(KEYS);
      try {
        // The ask applies only to sessions not marked trusted; a login marks the session.
        const ask = (await import('./helpers.js')).askLargePayments;
        const created = await call(s.app, 'PUT', '/api/v1/controls', { name: 'large-payments', data: { ...ask, scope: { ...ask.scope, session_labels_absent: ['trusted'] } } }, admin);
        expect(created.statusCode, created.body).toBe(201);
        await call(s.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'payer' }, admin);
        await call(s.app, 'POST', `/api/v1/agents/payer/controls/${json(created).control_id}`, undefined, admin);
        await linkToPayer(s.app, 'trust-on-login', { scope: { step_names: ['login'], stages: ['pre'] }, selector: { path: '*' }, evaluator: { name: 'regex', config: { pattern: '.' } }, action: { decision: 'log', session_labels: ['trusted'] } });
        await linkToPayer(s.app, 'no-double-pay', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'repeat', config: { max: 1, window: '1h' } }, action: { decision: 'deny' } });
        const asked = await evaluate(s.app, paymentInSession(90_000), regular);
        expect(asked.decision).toBe('ask');
        await approve(s.app, asked.approval.id);
        expect((await evaluate(s.app, { agent_name: 'payer', stage: 'pre', step: { type: 'tool', name: 'login', input: {} }, session_id: 'run-1' }, regular)).decision).toBe('allow');
        // No ask matches now: the step runs on the count it had, and its approval is used.
        expect((await evaluate(s.app, paymentInSession(90_000), regular)).decision).toBe('allow');
        const approval = json(await call(s.app, 'GET', `/api/v1/approvals/${asked.approval.id}`, undefined, regular));
        expect(approval.used_at).toEqual(expect.any(String));
        // So the same step again is counted, and is the repeat: never a free run each time.
        expect((await evaluate(s.app, paymentInSession(90_000), regular)).decision).toBe('deny');
        expect((await evaluate(s.app, paymentInSession(90_000), regular)).decision).toBe('deny');
      } finally {
        await s.close();
      }
    });

    it('a denied step submitted again is counted and denied', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'three-payments', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'rate', config: { limit: 3, window: '1h' } }, action: { decision: 'deny' } });
        const asked = await evaluate(s.app, payment(50_000), regular);
        expect((await call(s.app, 'POST', `/api/v1/approvals/${asked.approval.id}/deny`, { reason: 'no' }, approver)).statusCode).toBe(200);
        expect(await evaluate(s.app, payment(50_000), regular)).toMatchObject({ decision: 'deny', approval: { status: 'denied', reason: 'no' } });
        // Two counted (the question and the resubmission), one more fits.
        expect((await evaluate(s.app, payment(10), regular)).decision).toBe('allow');
        expect((await evaluate(s.app, payment(20), regular)).decision).toBe('deny');
      } finally {
        await s.close();
      }
    });
  });
}

describe('an approved step whose submission fails', () => {
  it('keeps its approval: the step submitted again once the failure is gone runs on it', async () => {
    // The session's row cannot be written for a while (a full disk): a step starting a session fails (5xx).
    let failing = false;
    const server = await startTestServer({
      env: KEYS,
      wrapStore: (real: Store) => {
        const { sharing } = real;
        if (sharing.mode !== 'local') throw new Error('a SQLite store was expected');
        const rows = sharing.sessionRows;
        const failingRows = new Proxy(rows, {
          get(target, prop) {
            if (prop === 'saveSession' && failing) return () => { throw new Error('SQLITE_FULL: database or disk is full'); };
            const value = Reflect.get(target, prop, target) as unknown;
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        return new Proxy(real, {
          get(target, prop, receiver) {
            if (prop === 'sharing') return { ...sharing, sessionRows: failingRows };
            return Reflect.get(target, prop, receiver);
          },
        });
      },
    });
    try {
      await seedPayments(server.app, admin);
      await linkToPayer(server.app, 'no-double-pay', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'repeat', config: { max: 1, window: '1h' } }, action: { decision: 'deny' } });
      const asked = await evaluate(server.app, paymentInSession(82_000), regular);
      expect(asked.decision).toBe('ask');
      await approve(server.app, asked.approval.id);
      failing = true;
      const failed = await call(server.app, 'POST', '/api/v1/evaluation', paymentInSession(82_000, 'run-2'), regular);
      expect(failed.statusCode).toBeGreaterThanOrEqual(500);
      failing = false;
      expect(json(await call(server.app, 'GET', `/api/v1/approvals/${asked.approval.id}`, undefined, regular)).used_at).toBeNull();
      expect(await evaluate(server.app, paymentInSession(82_000, 'run-2'), regular)).toMatchObject({ decision: 'allow', approval: { id: asked.approval.id, status: 'approved' } });
    } finally {
      await server.close();
    }
  });
});
