// Approvals through the API on both stores: bound to the exact step, used once, denied with
// the reason, expired, the errors of bad input, keys, the long-poll, the audit log and the stream.
import { afterAll, describe, expect, it } from 'vitest';
import { storeKinds } from '../server/both-stores.js';
import { call, json } from '../server/helpers.js';
import { ADMIN, APPROVER, evaluate, KEYS, payment, REGULAR, seedPayments } from './helpers.js';

const admin = { 'x-api-key': ADMIN };
const regular = { 'x-api-key': REGULAR };
const approver = { 'x-api-key': APPROVER };

for (const kind of storeKinds()) {
  describe.skipIf(kind.skip !== null)(kind.skip ?? `approvals API (${kind.kind})`, () => {
    afterAll(() => kind.cleanup());

    it('asks once per exact step, allows it once when approved, then asks again', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        expect((await evaluate(s.app, payment(500), regular)).decision).toBe('allow');
        const asked = await evaluate(s.app, payment(82_000), regular);
        expect(asked).toMatchObject({ decision: 'ask', is_safe: false, approval: { status: 'pending' } });
        expect(asked.matches.map((m: { action: string }) => m.action)).toEqual(['ask']);
        const id = asked.approval.id as string;
        expect(Date.parse(asked.approval.expires_at) - Date.now()).toBeGreaterThan(14 * 60_000);
        // The same step again: the same question. Key order is not a different step.
        const again = await evaluate(s.app, { stage: 'pre', step: { input: { amount: 82_000 }, name: 'pay', type: 'tool' }, agent_name: 'PAYER' }, regular);
        expect(again.approval.id).toBe(id);
        // A bigger amount is another question, never the one asked.
        const bigger = await evaluate(s.app, payment(820_000), regular);
        expect(bigger.approval.id).not.toBe(id);

        const approved = await call(s.app, 'POST', `/api/v1/approvals/${id}/approve`, { reason: 'Q4 invoice' }, approver);
        expect(approved.statusCode).toBe(200);
        expect(json(approved)).toMatchObject({ id, status: 'approved', reason: 'Q4 invoice', decided_by: expect.stringMatching(/^approver:[0-9a-f]{8}$/) });
        // The bigger amount is still waiting: approving one step approves nothing else.
        expect((await evaluate(s.app, payment(820_000), regular)).decision).toBe('ask');
        const runs = await evaluate(s.app, payment(82_000), regular);
        expect(runs).toMatchObject({ decision: 'allow', is_safe: true, approval: { id, status: 'approved', reason: 'Q4 invoice' } });
        const next = await evaluate(s.app, payment(82_000), regular);
        expect(next.decision).toBe('ask');
        expect(next.approval.id).not.toBe(id);
      } finally {
        await s.close();
      }
    });

    it('denies with the approver’s reason; expired questions deny', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const id = (await evaluate(s.app, payment(50_000), regular)).approval.id as string;
        const denied = await call(s.app, 'POST', `/api/v1/approvals/${id}/deny`, { reason: 'not in the budget' }, admin);
        expect(json(denied)).toMatchObject({ status: 'denied', reason: 'not in the budget', decided_by: expect.stringMatching(/^admin:/) });
        const result = await evaluate(s.app, payment(50_000), regular);
        expect(result).toMatchObject({ decision: 'deny', is_safe: false, approval: { id, status: 'denied', reason: 'not in the budget' } });
      } finally {
        await s.close();
      }
    });

    it('refuses bad input: unknown 404, decided 409, regular key 403, long reason 422', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const id = (await evaluate(s.app, payment(20_000), regular)).approval.id as string;
        expect((await call(s.app, 'POST', '/api/v1/approvals/apr_000000000000000000000000/approve', undefined, admin)).statusCode).toBe(404);
        expect((await call(s.app, 'GET', '/api/v1/approvals/nope', undefined, regular)).statusCode).toBe(404);
        const forbidden = await call(s.app, 'POST', `/api/v1/approvals/${id}/approve`, undefined, regular);
        expect(forbidden.statusCode).toBe(403);
        expect(json(forbidden).error_code).toBe('forbidden');
        const long = await call(s.app, 'POST', `/api/v1/approvals/${id}/deny`, { reason: 'x'.repeat(1001) }, admin);
        expect(long.statusCode).toBe(422);
        expect(json(long).errors[0].field).toBe('reason');
        expect((await call(s.app, 'POST', `/api/v1/approvals/${id}/deny`, { reason: 'no', extra: 1 }, admin)).statusCode).toBe(422);
        // Nothing of that decided it.
        expect(json(await call(s.app, 'GET', `/api/v1/approvals/${id}`, undefined, regular)).status).toBe('pending');
        expect((await call(s.app, 'POST', `/api/v1/approvals/${id}/approve`, undefined, admin)).statusCode).toBe(200);
        const twice = await call(s.app, 'POST', `/api/v1/approvals/${id}/deny`, undefined, admin);
        expect(twice.statusCode).toBe(409);
        expect(json(twice).detail).toMatch(/is approved by admin:/);
        // An approver key reads and decides approvals, and nothing else.
        expect((await call(s.app, 'GET', '/api/v1/approvals', undefined, approver)).statusCode).toBe(200);
        expect((await call(s.app, 'GET', '/api/v1/controls', undefined, approver)).statusCode).toBe(403);
        expect((await call(s.app, 'POST', '/api/v1/evaluation', payment(1), approver)).statusCode).toBe(403);
        expect((await call(s.app, 'PUT', '/api/v1/controls', { name: 'x' }, approver)).statusCode).toBe(403);
        expect((await call(s.app, 'GET', '/api/v1/approvals', undefined, {})).statusCode).toBe(401);
      } finally {
        await s.close();
      }
    });

    it('shows the step masked as recordings are; lists by status', async () => {
      const s = await kind.open(KEYS);
      try {
        await seedPayments(s.app, admin);
        const card = '4111111111111111';
        const id = (await evaluate(s.app, payment(30_000, { card, api_token: 'tok-abcdef', note: `pay with ${card}` }), regular)).approval.id as string;
        const shown = json(await call(s.app, 'GET', `/api/v1/approvals/${id}`, undefined, regular));
        expect(shown).toMatchObject({ id, status: 'pending', agent_name: 'payer', control_name: 'large-payments', stage: 'pre', step_type: 'tool', step_name: 'pay' });
        expect(shown.step.input.amount).toBe(30_000);
        expect(shown.step.input.api_token).toBe('[REDACTED]');
        expect(JSON.stringify(shown)).not.toContain(card);
        const pending = json(await call(s.app, 'GET', '/api/v1/approvals?status=pending', undefined, regular));
        expect(pending.approvals.map((a: { id: string }) => a.id)).toEqual([id]);
        expect(json(await call(s.app, 'GET', '/api/v1/approvals?status=approved', undefined, regular)).approvals).toEqual([]);
        expect((await call(s.app, 'GET', '/api/v1/approvals?status=maybe', undefined, regular)).statusCode).toBe(422);
      } finally {
        await s.close();
      }
    });

    it('wait answers as soon as the approval is decided; every step is in the audit log and the stream', async () => {
      const s = await kind.open(KEYS);
      const frames: string[] = [];
      const sub = s.observability.hub.subscribe({ write: (f: string) => (frames.push(f), true), once: () => undefined, end: () => undefined, destroy: () => undefined }, {});
      try {
        await seedPayments(s.app, admin);
        const id = (await evaluate(s.app, payment(40_000), regular)).approval.id as string;
        // A wait that answered only at its timeout (two minutes, the most a wait takes) would
        // outlast this test's own time limit: answering at all shows it answered at the decision.
        const waited = call(s.app, 'GET', `/api/v1/approvals/${id}/wait?timeout=2m`, undefined, regular);
        await new Promise((resolve) => setTimeout(resolve, 100));
        await call(s.app, 'POST', `/api/v1/approvals/${id}/approve`, undefined, admin);
        expect(json(await waited)).toMatchObject({ id, status: 'approved' });
        // A short wait on a pending approval answers it pending.
        const other = (await evaluate(s.app, payment(41_000), regular)).approval.id as string;
        expect(json(await call(s.app, 'GET', `/api/v1/approvals/${other}/wait?timeout=200ms`, undefined, regular)).status).toBe('pending');
        expect((await call(s.app, 'GET', `/api/v1/approvals/${other}/wait?timeout=soon`, undefined, regular)).statusCode).toBe(422);
        await evaluate(s.app, payment(40_000), regular);
        const audit = json(await call(s.app, 'GET', '/api/v1/audit?limit=20', undefined, admin));
        const ops = audit.entries.filter((e: { kind: string }) => e.kind === 'approval').map((e: { op: string; after: { id: string } }) => `${e.op} ${e.after.id === id ? 'a' : 'b'}`);
        expect(ops).toEqual(['use a', 'ask b', 'approve a', 'ask a']);
        const events = frames.filter((f) => f.startsWith('event: approval')).map((f) => JSON.parse(f.split('data: ')[1]!) as { event: string; approval: { id: string } });
        expect(events.map((e) => `${e.event} ${e.approval.id === id ? 'a' : 'b'}`)).toEqual(['asked a', 'approved a', 'asked b', 'used a']);
      } finally {
        if (sub) s.observability.hub.unsubscribe(sub);
        await s.close();
      }
    });
  });
}
