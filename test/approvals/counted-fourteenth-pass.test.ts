// Fourteenth attack pass on approved steps beside counting controls (docs/approvals.md,
// "Beside rate, budget and repeat"). The approved step adds only what it counts beyond its
// question's counts; what it may not do is run uncounted once the question's counts have
// left the window it runs in, or the counters no longer hold them (a restart, a window
// changed since, which empties each key).
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
