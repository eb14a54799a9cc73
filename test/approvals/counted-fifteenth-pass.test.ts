// Fifteenth attack pass on approved steps beside counting controls (docs/approvals.md,
// "Beside rate, budget and repeat"), a second reading of the fourteenth's fixes: the
// approved step takes off only the question's counts the counters still hold. A key whose
// window changed is emptied; changed back before the approved step is sent, the window is
// the question's again but the counts in it are not.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { storeKinds } from '../server/both-stores.js';
import { call, json, startTestServer } from '../server/helpers.js';
import { ADMIN, approve, evaluate, KEYS, payment, payScope, REGULAR, seedPayments } from './helpers.js';

const admin = { 'x-api-key': ADMIN };
const regular = { 'x-api-key': REGULAR };
const names = (answer: { matches: Array<{ control_name: string }> }) => answer.matches.map((m) => m.control_name);

const oneAnHour = { scope: payScope, selector: { path: '*' }, evaluator: { name: 'rate', config: { limit: 1, window: '1h' } }, action: { decision: 'deny' } };
const oneInTwoHours = { ...oneAnHour, evaluator: { name: 'rate', config: { limit: 1, window: '2h' } } };

for (const kind of storeKinds()) {
  describe.skipIf(kind.skip !== null)(kind.skip ?? `an approved step whose control's window changed and changed back since it asked (${kind.kind})`, () => {
    afterAll(() => kind.cleanup());

    it('rate 1 an hour, 2 hours for one payment, then 1 an hour again: the approved payment is counted, so the next one is over', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const created = await call(s.app, 'PUT', '/api/v1/controls', { name: 'one-payment-at-a-time', data: oneAnHour }, admin);
        expect(created.statusCode, created.body).toBe(201);
        const rateId = json(created).control_id as number;
        expect((await call(s.app, 'POST', `/api/v1/agents/payer/controls/${rateId}`, undefined, admin)).statusCode).toBe(200);
        const asked = await evaluate(s.app, payment(82_000), regular);
        expect(asked.decision).toBe('ask');
        // Widened: the next step empties the key (the question's count with it) and is its one count.
        expect((await call(s.app, 'PUT', `/api/v1/controls/${rateId}/data`, { data: oneInTwoHours }, admin)).statusCode).toBe(200);
        expect((await evaluate(s.app, payment(5), regular)).decision).toBe('allow');
        // Back to an hour: the key is emptied again when next counted; the question's count is in no window.
        expect((await call(s.app, 'PUT', `/api/v1/controls/${rateId}/data`, { data: oneAnHour }, admin)).statusCode).toBe(200);
        await approve(s.app, asked.approval.id);
        expect((await evaluate(s.app, payment(82_000), regular)).decision).toBe('allow');
        // The approved payment ran in this hour: a second one is over the limit.
        const second = await evaluate(s.app, payment(5), regular);
        expect(second.decision).toBe('deny');
        expect(names(second)).toContain('one-payment-at-a-time');
      } finally {
        await s.close();
      }
    });
  });
}

describe('an approved step whose control\'s window changed and changed back, then a restart (SQLite file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-counted-15-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('rate 2 an hour: the key emptied twice before the restart holds none of the question\'s count, so the approved payment is the hour\'s second', async () => {
    const env = { ...KEYS, DATABASE_URL: join(dir, 'guard.db') };
    const twoAnHour = { ...oneAnHour, evaluator: { name: 'rate', config: { limit: 2, window: '1h' } } };
    const first = await startTestServer({ env });
    let asked: { decision: string; approval: { id: string } };
    try {
      await seedPayments(first.app, admin);
      const created = await call(first.app, 'PUT', '/api/v1/controls', { name: 'two-payments-an-hour', data: twoAnHour }, admin);
      expect(created.statusCode, created.body).toBe(201);
      const rateId = json(created).control_id as number;
      expect((await call(first.app, 'POST', `/api/v1/agents/payer/controls/${rateId}`, undefined, admin)).statusCode).toBe(200);
      asked = await evaluate(first.app, payment(82_000), regular);
      expect(asked.decision).toBe('ask');
      // Two hours for one payment (the key emptied), then an hour again and one payment (emptied again): the file keeps that one count.
      const twoInTwoHours = { ...oneAnHour, evaluator: { name: 'rate', config: { limit: 2, window: '2h' } } };
      expect((await call(first.app, 'PUT', `/api/v1/controls/${rateId}/data`, { data: twoInTwoHours }, admin)).statusCode).toBe(200);
      expect((await evaluate(first.app, payment(5), regular)).decision).toBe('allow');
      expect((await call(first.app, 'PUT', `/api/v1/controls/${rateId}/data`, { data: twoAnHour }, admin)).statusCode).toBe(200);
      expect((await evaluate(first.app, payment(6), regular)).decision).toBe('allow');
    } finally {
      await first.close();
    }
    const second = await startTestServer({ env });
    try {
      await approve(second.app, asked.approval.id);
      expect((await evaluate(second.app, payment(82_000), regular)).decision).toBe('allow');
      // The payment of 6 and the approved one are the hour's two: a third is over.
      const third = await evaluate(second.app, payment(7), regular);
      expect(third.decision).toBe('deny');
      expect(names(third)).toContain('two-payments-an-hour');
    } finally {
      await second.close();
    }
  });
});
