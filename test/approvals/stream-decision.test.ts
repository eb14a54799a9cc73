// The live stream's evaluation summary of an asked step says what the answer said: ask
// while pending, allow once approved, deny once denied, with the approval's id and status
// (not "ask" for a step a person already decided).
import { afterAll, describe, expect, it } from 'vitest';
import { storeKinds } from '../server/both-stores.js';
import { call } from '../server/helpers.js';
import { ADMIN, evaluate, KEYS, payment, REGULAR, seedPayments } from './helpers.js';

const admin = { 'x-api-key': ADMIN };
const regular = { 'x-api-key': REGULAR };

type Summary = { decision: string; approval?: { id: string; status: string } };

for (const kind of storeKinds()) {
  describe.skipIf(kind.skip !== null)(kind.skip ?? `the live stream on asked steps (${kind.kind})`, () => {
    afterAll(() => kind.cleanup());

    it('streams the decision as answered once a person decided, with the approval', async () => {
      const s = await kind.open(KEYS);
      const frames: string[] = [];
      const asks: string[] = [];
      const sink = (into: string[]) => ({ write: (f: string) => (into.push(f), true), once: () => undefined, end: () => undefined, destroy: () => undefined });
      const all = s.observability.hub.subscribe(sink(frames), {});
      const onlyAsk = s.observability.hub.subscribe(sink(asks), { decisions: new Set(['ask'] as const) });
      const summaries = (from: string[]) => from.filter((f) => f.startsWith('id:') && f.includes('event: evaluation')).map((f) => JSON.parse(f.split('data: ')[1]!) as Summary);
      try {
        await seedPayments(s.app, admin);
        const approved = (await evaluate(s.app, payment(40_000), regular)).approval.id as string;
        await call(s.app, 'POST', `/api/v1/approvals/${approved}/approve`, undefined, admin);
        expect((await evaluate(s.app, payment(40_000), regular)).decision).toBe('allow');
        const denied = (await evaluate(s.app, payment(50_000), regular)).approval.id as string;
        await call(s.app, 'POST', `/api/v1/approvals/${denied}/deny`, { reason: 'no' }, admin);
        expect((await evaluate(s.app, payment(50_000), regular)).decision).toBe('deny');
        await evaluate(s.app, payment(500), regular);
        // Summaries reach the stream shortly after the answer.
        await expect.poll(() => summaries(frames).length).toBe(5);

        expect(summaries(frames).map((e) => [e.decision, e.approval ?? null])).toEqual([
          ['ask', { id: approved, status: 'pending' }],
          ['allow', { id: approved, status: 'approved' }],
          ['ask', { id: denied, status: 'pending' }],
          ['deny', { id: denied, status: 'denied' }],
          ['allow', null],
        ]);
        // A subscriber of asks hears the two questions, not the decided submissions.
        expect(summaries(asks).map((e) => e.approval?.status)).toEqual(['pending', 'pending']);
      } finally {
        for (const sub of [all, onlyAsk]) if (sub) s.observability.hub.unsubscribe(sub);
        await s.close();
      }
    });
  });
}
