// Attacks on an approved step beside counting controls (docs/approvals.md, "Beside rate,
// budget and repeat"): the approved step submitted again adds nothing to the counts its
// question made. What it may not do: run uncounted where its question was never counted
// (another session, another key or amount read from the step's context, which the
// approval is not bound to), or lose a person's approval when the request fails.
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createSchema, dropSchemas, pgRequired, pgUnreachable, schemaUrl, skipReasonOf } from '../replicas/pg.js';
import { startPgApp } from '../replicas/pg-app.js';
import { storeKinds } from '../server/both-stores.js';
import { call, json } from '../server/helpers.js';
import { ADMIN, approve, evaluate, KEYS, linkToPayer, payment, paymentInSession, payScope, REGULAR, seedPayments } from './helpers.js';

const admin = { 'x-api-key': ADMIN };
const regular = { 'x-api-key': REGULAR };



const withContext = (amount: number, context: Record<string, unknown>) => {
  const p = payment(amount);
  return { ...p, step: { ...p.step, context } };
};

for (const kind of storeKinds()) {
  describe.skipIf(kind.skip !== null)(kind.skip ?? `approved steps beside counting controls, attacked (${kind.kind})`, () => {
    afterAll(() => kind.cleanup());

    it('repeat {max: 1}: a step approved in one session runs at most once in another', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'no-double-pay', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'repeat', config: { max: 1, window: '1h' } }, action: { decision: 'deny' } });
        const asked = await evaluate(s.app, paymentInSession(82_000, 'run-a'), regular);
        expect(asked.decision).toBe('ask');
        await approve(s.app, asked.approval.id);
        // The approval is not bound to a session: run-b may use it. Its question was counted in run-a, not here.
        expect((await evaluate(s.app, paymentInSession(82_000, 'run-b'), regular)).decision).toBe('allow');
        const again = await evaluate(s.app, paymentInSession(82_000, 'run-b'), regular);
        expect(again.decision).toBe('deny');
        expect(again.matches.map((m: { control_name: string }) => m.control_name)).toContain('no-double-pay');
      } finally {
        await s.close();
      }
    });

    it('budget of context.cost: the approved step sent with a larger cost is counted at that cost', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'fee-budget', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'budget', config: { max: 100, window: '24h', amount: 'context.cost' } }, action: { decision: 'deny' } });
        const asked = await evaluate(s.app, withContext(82_000, { cost: 10 }), regular);
        expect(asked.decision).toBe('ask');
        await approve(s.app, asked.approval.id);
        // Same input, so the same approval; the context is the agent's to write, and 500 is over the budget of 100.
        const runs = await evaluate(s.app, withContext(82_000, { cost: 500 }), regular);
        expect(runs.decision).toBe('deny');
        expect(runs.matches.map((m: { control_name: string }) => m.control_name)).toContain('fee-budget');
      } finally {
        await s.close();
      }
    });

    it('a rate control linked after the question counts the approved step', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const asked = await evaluate(s.app, payment(82_000), regular);
        expect(asked.decision).toBe('ask');
        await approve(s.app, asked.approval.id);
        await linkToPayer(s.app, 'one-payment-an-hour', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'rate', config: { limit: 1, window: '1h' } }, action: { decision: 'deny' } });
        expect((await evaluate(s.app, payment(82_000), regular)).decision).toBe('allow');
        // The hour's one payment was the approved one.
        expect((await evaluate(s.app, payment(5), regular)).decision).toBe('deny');
      } finally {
        await s.close();
      }
    });

    it('a budget that asks when it is over: the approved payment over it is spent, so the next one asks too', async () => {
      const s = await kind.open(KEYS);
      try {
        await call(s.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'payer' }, admin);
        await linkToPayer(s.app, 'daily-budget', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'budget', config: { max: 100, window: '24h', amount: 'input.amount' } }, action: { decision: 'ask' } });
        expect((await evaluate(s.app, payment(90), regular)).decision).toBe('allow');
        const asked = await evaluate(s.app, payment(50), regular);
        expect(asked.decision).toBe('ask');
        await approve(s.app, asked.approval.id);
        expect((await evaluate(s.app, payment(50), regular)).decision).toBe('allow');
        // 140 of 100 spent: 10 more is over the budget, and a person is asked again.
        const next = await evaluate(s.app, payment(10), regular);
        expect(next.decision).toBe('ask');
        expect(next.matches[0].result.metadata).toMatchObject({ used: 140, limit: 100 });
      } finally {
        await s.close();
      }
    });

    it('rate per context.user_id: the approved step sent for another user counts for that user', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'one-payment-per-user', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'rate', config: { limit: 1, window: '1h', key: 'context.user_id' } }, action: { decision: 'deny' } });
        const asked = await evaluate(s.app, withContext(82_000, { user_id: 'ann' }), regular);
        expect(asked.decision).toBe('ask');
        await approve(s.app, asked.approval.id);
        expect((await evaluate(s.app, withContext(82_000, { user_id: 'bob' }), regular)).decision).toBe('allow');
        // bob's one payment of the hour was the approved one.
        expect((await evaluate(s.app, withContext(5, { user_id: 'bob' }), regular)).decision).toBe('deny');
      } finally {
        await s.close();
      }
    });

  });
}


const unreachable = await pgUnreachable();

describe.skipIf(unreachable !== null && !pgRequired)(unreachable !== null && !pgRequired ? skipReasonOf(unreachable) : 'an approved step whose request fails (PostgreSQL)', () => {
  const schemas: string[] = [];
  afterAll(() => dropSchemas(schemas));

  it('a request that fails after its approval was taken (the session cannot be read) leaves the approval to the next submission', async () => {
    const url = schemaUrl(await createSchema(schemas));
    const s = await startPgApp(url, KEYS);
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      await seedPayments(s.app, admin);
      // A session-aware control, so the step's session is read before it is evaluated.
      await linkToPayer(s.app, 'no-double-pay', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'repeat', config: { max: 2, window: '1h' } }, action: { decision: 'deny' } });
      const asked = await evaluate(s.app, paymentInSession(82_000, 'run-1'), regular);
      expect(asked.decision).toBe('ask');
      await approve(s.app, asked.approval.id);
      // Part of the database fails for one request: the sessions cannot be read, the approvals can.
      await db.query('ALTER TABLE sessions RENAME TO sessions_away');
      const failed = await call(s.app, 'POST', '/api/v1/evaluation', paymentInSession(82_000, 'run-1'), regular);
      await db.query('ALTER TABLE sessions_away RENAME TO sessions');
      expect(failed.statusCode).toBeGreaterThanOrEqual(500);
      // The step did not run: the person's approval is still there for it.
      expect(json(await call(s.app, 'GET', `/api/v1/approvals/${asked.approval.id}`, undefined, regular)).used_at).toBeNull();
      expect(await evaluate(s.app, paymentInSession(82_000, 'run-1'), regular)).toMatchObject({ decision: 'allow', approval: { id: asked.approval.id, status: 'approved' } });
    } finally {
      await db.end();
      await s.close();
    }
  });
});
