// Fourteenth attack pass on approved steps beside counting controls (docs/approvals.md,
// "Beside rate, budget and repeat"). The approved step adds only what it counts beyond its
// question's counts; what it may not do is run uncounted once the question's counts have
// left the window it runs in, or the counters no longer hold them (a restart, a window
// changed since, which empties each key); nor run on its approval over a counting ask
// control that finds it over where its question was not (a larger context.cost, another
// user's key): that is a question nobody was asked.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { storeKinds } from '../server/both-stores.js';
import { call, json, startTestServer } from '../server/helpers.js';
import { ADMIN, approve, evaluate, KEYS, linkToPayer, payment, payScope, REGULAR, seedPayments } from './helpers.js';

const admin = { 'x-api-key': ADMIN };
const regular = { 'x-api-key': REGULAR };

describe('an approved step used after its question left the window (SQLite, a fake clock)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('rate {limit: 1, window: 1m}: the payment approved 5 minutes after it asked is the minute\'s one payment', async () => {
    // The server's counters run on the monotonic clock (performance), its approvals on Date.
    vi.useFakeTimers({ toFake: ['Date', 'performance'] });
    const s = await startTestServer({ env: KEYS });
    try {
      await seedPayments(s.app, admin);
      await linkToPayer(s.app, 'one-payment-a-minute', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'rate', config: { limit: 1, window: '1m' } }, action: { decision: 'deny' } });
      const asked = await evaluate(s.app, payment(82_000), regular);
      expect(asked.decision).toBe('ask');
      // A person answers within the approval's 15 minutes, long after the rate's minute.
      vi.advanceTimersByTime(5 * 60_000);
      await approve(s.app, asked.approval.id);
      expect((await evaluate(s.app, payment(82_000), regular)).decision).toBe('allow');
      // The approved payment ran now: a second one within the same minute is over the limit.
      const second = await evaluate(s.app, payment(5), regular);
      expect(second.decision).toBe('deny');
      expect(second.matches.map((m: { control_name: string }) => m.control_name)).toContain('one-payment-a-minute');
    } finally {
      await s.close();
    }
  });

  it('budget {max: 100,000, window: 10m}: the payment approved 12 minutes after it asked is spent in the window it runs in', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'performance'] });
    const s = await startTestServer({ env: KEYS });
    try {
      await seedPayments(s.app, admin);
      await linkToPayer(s.app, 'ten-minute-budget', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'budget', config: { max: 100_000, window: '10m', amount: 'input.amount' } }, action: { decision: 'deny' } });
      const asked = await evaluate(s.app, payment(82_000), regular);
      expect(asked.decision).toBe('ask');
      vi.advanceTimersByTime(12 * 60_000);
      await approve(s.app, asked.approval.id);
      expect((await evaluate(s.app, payment(82_000), regular)).decision).toBe('allow');
      // 82,000 of the 100,000 went out now: 9,000 fits twice, then nothing.
      expect((await evaluate(s.app, payment(9_000), regular)).decision).toBe('allow');
      expect((await evaluate(s.app, payment(9_000), regular)).decision).toBe('allow');
      expect((await evaluate(s.app, payment(9_000), regular)).decision).toBe('deny');
    } finally {
      await s.close();
    }
  });
});

const oneAnHour = { scope: payScope, selector: { path: '*' }, evaluator: { name: 'rate', config: { limit: 1, window: '1h' } }, action: { decision: 'deny' } };

for (const kind of storeKinds()) {
  describe.skipIf(kind.skip !== null)(kind.skip ?? `an approved step whose control's window changed since it asked (${kind.kind})`, () => {
    afterAll(() => kind.cleanup());

    it('rate 1 an hour widened to 1 every 2 hours while the person decides: the approved payment is the one of the 2 hours', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const created = await call(s.app, 'PUT', '/api/v1/controls', { name: 'one-payment-at-a-time', data: oneAnHour }, admin);
        expect(created.statusCode, created.body).toBe(201);
        const rateId = json(created).control_id as number;
        expect((await call(s.app, 'POST', `/api/v1/agents/payer/controls/${rateId}`, undefined, admin)).statusCode).toBe(200);
        const asked = await evaluate(s.app, payment(82_000), regular);
        expect(asked.decision).toBe('ask');
        // The operator tightens the rate; a new window empties each key's counts, the question's too.
        const tightened = { ...oneAnHour, evaluator: { name: 'rate', config: { limit: 1, window: '2h' } } };
        expect((await call(s.app, 'PUT', `/api/v1/controls/${rateId}/data`, { data: tightened }, admin)).statusCode).toBe(200);
        await approve(s.app, asked.approval.id);
        expect((await evaluate(s.app, payment(82_000), regular)).decision).toBe('allow');
        const second = await evaluate(s.app, payment(5), regular);
        expect(second.decision).toBe('deny');
        expect(second.matches.map((m: { control_name: string }) => m.control_name)).toContain('one-payment-at-a-time');
      } finally {
        await s.close();
      }
    });
  });
}

describe('an approved step used after a restart (SQLite file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-counted-14-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('rate {limit: 1, window: 10m}, a window the file does not keep: the payment approved after a restart is the one of the 10 minutes', async () => {
    const env = { ...KEYS, DATABASE_URL: join(dir, 'guard.db') };
    const first = await startTestServer({ env });
    let asked: { decision: string; approval: { id: string } };
    try {
      await seedPayments(first.app, admin);
      await linkToPayer(first.app, 'one-payment-in-10-minutes', { ...oneAnHour, evaluator: { name: 'rate', config: { limit: 1, window: '10m' } } });
      asked = await evaluate(first.app, payment(82_000), regular);
      expect(asked.decision).toBe('ask');
    } finally {
      await first.close();
    }
    // Counts of windows under an hour live in memory only: the restart forgets the question's.
    const second = await startTestServer({ env });
    try {
      await approve(second.app, asked.approval.id);
      expect((await evaluate(second.app, payment(82_000), regular)).decision).toBe('allow');
      const next = await evaluate(second.app, payment(5), regular);
      expect(next.decision).toBe('deny');
      expect(next.matches.map((m: { control_name: string }) => m.control_name)).toContain('one-payment-in-10-minutes');
    } finally {
      await second.close();
    }
  });
});

const withContext = (amount: number, context: Record<string, unknown>) => {
  const p = payment(amount);
  return { ...p, step: { ...p.step, context } };
};
const names = (answer: { matches: Array<{ control_name: string }> }) => answer.matches.map((m) => m.control_name);

for (const kind of storeKinds()) {
  describe.skipIf(kind.skip !== null)(kind.skip ?? `an approved step that a counting ask control finds over where its question was not (${kind.kind})`, () => {
    afterAll(() => kind.cleanup());

    it('budget {max: 100, amount: context.cost, ask}: approved at a cost of 10, the step sent at 500 asks again', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'fee-budget', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'budget', config: { max: 100, window: '24h', amount: 'context.cost' } }, action: { decision: 'ask' } });
        // Asked by large-payments; the fee is well within its budget.
        const asked = await evaluate(s.app, withContext(82_000, { cost: 10 }), regular);
        expect(asked.decision).toBe('ask');
        await approve(s.app, asked.approval.id);
        // The same input, so the same approval; the context is the agent's to write, and 500 is over the budget nobody was asked about.
        const inflated = await evaluate(s.app, withContext(82_000, { cost: 500 }), regular);
        expect(inflated).toMatchObject({ decision: 'ask', approval: { status: 'pending' } });
        expect(inflated.approval.id).not.toBe(asked.approval.id);
        expect(names(inflated)).toContain('fee-budget');
        // A person says yes to 500 over the budget: it runs once, spent.
        await approve(s.app, inflated.approval.id);
        expect((await evaluate(s.app, withContext(82_000, { cost: 500 }), regular)).decision).toBe('allow');
        const next = await evaluate(s.app, withContext(5, { cost: 1 }), regular);
        expect(next.decision).toBe('ask');
        // 500, and the 10 its first question counted (that question's step never ran: counted over, never under).
        expect(next.matches[0].result.metadata).toMatchObject({ used: 510, limit: 100 });
      } finally {
        await s.close();
      }
    });

    it('budget {max: 100, ask} over by 50 when it asked: the approval lets 50 over, not 5,000; the next question\'s, 30 of its 5,000', async () => {
      const s = await kind.open(KEYS);
      try {
        await call(s.app, 'POST', '/api/v1/agents/initAgent', { agent_name: 'payer' }, admin);
        await linkToPayer(s.app, 'fee-budget', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'budget', config: { max: 100, window: '24h', amount: 'context.cost' } }, action: { decision: 'ask' } });
        expect((await evaluate(s.app, withContext(1, { cost: 90 }), regular)).decision).toBe('allow');
        const asked = await evaluate(s.app, withContext(2, { cost: 50 }), regular);
        expect(asked.decision).toBe('ask');
        await approve(s.app, asked.approval.id);
        const inflated = await evaluate(s.app, withContext(2, { cost: 5_000 }), regular);
        expect(inflated.decision).toBe('ask');
        expect(inflated.approval.id).not.toBe(asked.approval.id);
        // Nothing of the 5,000 was spent: 90 of 100.
        expect(inflated.matches[0].result.metadata).toMatchObject({ used: 90, limit: 100 });
        // The person's yes to 50 over: the step sent at 50 or less runs on it, and is spent over the budget.
        const question = json(await call(s.app, 'GET', `/api/v1/approvals/${asked.approval.id}`, undefined, regular));
        expect(question.used_at).toEqual(expect.any(String));
        await approve(s.app, inflated.approval.id);
        expect(await evaluate(s.app, withContext(2, { cost: 30 }), regular)).toMatchObject({ decision: 'allow', approval: { id: inflated.approval.id, status: 'approved' } });
        expect((await evaluate(s.app, withContext(3, { cost: 1 }), regular)).matches[0].result.metadata).toMatchObject({ used: 120 });
      } finally {
        await s.close();
      }
    });

    it('rate {limit: 1, key: context.user_id, ask}: approved for ann, the step sent for bob, who paid already, asks again', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        await linkToPayer(s.app, 'one-payment-per-user', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'rate', config: { limit: 1, window: '1h', key: 'context.user_id' } }, action: { decision: 'ask' } });
        expect((await evaluate(s.app, withContext(5, { user_id: 'bob' }), regular)).decision).toBe('allow');
        const asked = await evaluate(s.app, withContext(82_000, { user_id: 'ann' }), regular);
        expect(names(asked)).toEqual(['large-payments']);
        await approve(s.app, asked.approval.id);
        const forBob = await evaluate(s.app, withContext(82_000, { user_id: 'bob' }), regular);
        expect(forBob.decision).toBe('ask');
        expect(forBob.approval.id).not.toBe(asked.approval.id);
        expect(names(forBob)).toContain('one-payment-per-user');
      } finally {
        await s.close();
      }
    });
  });
}

describe('an approved step whose question was counted within an ask budget that others spent past since (SQLite)', () => {
  it('runs on its approval: it adds nothing beyond its question\'s count', async () => {
    const s = await startTestServer({ env: KEYS });
    try {
      await seedPayments(s.app, admin);
      await linkToPayer(s.app, 'fee-budget', { scope: payScope, selector: { path: '*' }, evaluator: { name: 'budget', config: { max: 100, window: '24h', amount: 'context.cost' } }, action: { decision: 'ask' } });
      const asked = await evaluate(s.app, withContext(82_000, { cost: 60 }), regular);
      expect(names(asked)).toEqual(['large-payments']);
      // Another payment is over the 40 left: a person lets it go over.
      const other = await evaluate(s.app, withContext(7, { cost: 50 }), regular);
      expect(names(other)).toEqual(['fee-budget']);
      await approve(s.app, other.approval.id);
      expect((await evaluate(s.app, withContext(7, { cost: 50 }), regular)).decision).toBe('allow');
      await approve(s.app, asked.approval.id);
      expect(await evaluate(s.app, withContext(82_000, { cost: 60 }), regular)).toMatchObject({ decision: 'allow', approval: { id: asked.approval.id } });
    } finally {
      await s.close();
    }
  });
});
