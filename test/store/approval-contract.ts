/**
 * The approval behaviour every Store must have (docs/approvals.md), run against SQLite and
 * PostgreSQL. `open` gives a fresh, empty store; `openTwin` (shared stores only) a second
 * store on the same database, as a second replica has.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalRequest, Store } from '../../src/store/types.js';

const T0 = Date.parse('2026-01-01T12:00:00.000Z');
const MIN = 60_000;

export function approvalRequest(overrides: Partial<ApprovalRequest> = {}): ApprovalRequest {
  return {
    digest: 'd1',
    agent_name: 'bot',
    stage: 'pre',
    step_type: 'tool',
    step_name: 'pay',
    control_id: 7,
    control_name: 'large-payments',
    step_json: JSON.stringify({ type: 'tool', name: 'pay', input: { amount: 82_000 } }),
    timeout_ms: 15 * MIN,
    actor: 'regular:12345678',
    ...overrides,
  };
}

const by = { by: 'admin:abcd1234' };

export function defineApprovalContract(label: string, open: () => Promise<Store>, openTwin?: (store: Store) => Promise<Store>) {
  describe(`${label}: approvals`, () => {
    const opened: Store[] = [];
    const fresh = async () => {
      const s = await open();
      opened.push(s);
      return s;
    };
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });

    it('asks once per step: the same step while pending meets the same approval, another input a new one', async () => {
      const store = await fresh();
      const first = await store.submitApproval(approvalRequest(), T0);
      expect(first.outcome).toBe('created');
      expect(first.approval).toMatchObject({
        status: 'pending', agent_name: 'bot', stage: 'pre', step_type: 'tool', step_name: 'pay', control_id: 7, control_name: 'large-payments',
        step: { type: 'tool', name: 'pay', input: { amount: 82_000 } },
        created_at: '2026-01-01T12:00:00.000Z', expires_at: '2026-01-01T12:15:00.000Z', decided_at: null, decided_by: null, reason: null, used_at: null,
      });
      expect(first.approval.id).toMatch(/^apr_[0-9a-f]{24}$/);
      const again = await store.submitApproval(approvalRequest(), T0 + MIN);
      expect(again).toEqual({ outcome: 'pending', approval: first.approval });
      const other = await store.submitApproval(approvalRequest({ digest: 'd2' }), T0 + MIN);
      expect(other.outcome).toBe('created');
      expect(other.approval.id).not.toBe(first.approval.id);
    });

    it('useApproved takes only an unused approval in time, once; pending, denied and stale ones are left as they are', async () => {
      const store = await fresh();
      expect(await store.useApproved('d1', 'regular:1', T0)).toBeNull();
      const { approval } = await store.submitApproval(approvalRequest({ counted: '[["7","bot",1]]' }), T0);
      expect(await store.useApproved('d1', 'regular:1', T0 + MIN)).toBeNull();
      await store.decideApproval(approval.id, { status: 'approved', ...by, reason: null }, T0 + MIN);
      const used = await store.useApproved('d1', 'regular:1', T0 + 2 * MIN);
      // With what its question counted, as it was submitted.
      expect(used).toMatchObject({ approval: { id: approval.id, status: 'approved', used_at: '2026-01-01T12:02:00.000Z' }, counted: '[["7","bot",1]]' });
      expect(used!.approval).not.toHaveProperty('counted');
      expect(await store.useApproved('d1', 'regular:1', T0 + 3 * MIN)).toBeNull();
      // Used: the next submission is a new question.
      expect((await store.submitApproval(approvalRequest(), T0 + 3 * MIN)).outcome).toBe('created');

      const denied = (await store.submitApproval(approvalRequest({ digest: 'd2' }), T0)).approval;
      await store.decideApproval(denied.id, { status: 'denied', ...by, reason: 'no' }, T0 + MIN);
      expect(await store.useApproved('d2', 'regular:1', T0 + 2 * MIN)).toBeNull();
      expect((await store.submitApproval(approvalRequest({ digest: 'd2' }), T0 + 2 * MIN)).outcome).toBe('denied');

      // Approved longer ago than its timeout: not taken, and the submission asks anew.
      const stale = (await store.submitApproval(approvalRequest({ digest: 'd3' }), T0)).approval;
      await store.decideApproval(stale.id, { status: 'approved', ...by, reason: null }, T0 + MIN);
      expect(await store.useApproved('d3', 'regular:1', T0 + 17 * MIN)).toBeNull();
      expect((await store.getApproval(stale.id, T0 + 17 * MIN))!.used_at).toBeNull();
    });

    it('giveBackApproval makes only the use it names unused again, once, and audits it', async () => {
      const store = await fresh();
      const { approval } = await store.submitApproval(approvalRequest(), T0);
      await store.decideApproval(approval.id, { status: 'approved', ...by, reason: null }, T0 + MIN);
      await store.useApproved('d1', 'regular:1', T0 + 2 * MIN);
      expect(await store.giveBackApproval(approval.id, T0 + 3 * MIN, 'regular:1', T0 + 3 * MIN)).toBe(false);
      expect(await store.giveBackApproval(approval.id, T0 + 2 * MIN, 'regular:1', T0 + 3 * MIN)).toBe(true);
      expect(await store.giveBackApproval(approval.id, T0 + 2 * MIN, 'regular:1', T0 + 3 * MIN)).toBe(false);
      expect((await store.getApproval(approval.id, T0 + 3 * MIN))!.used_at).toBeNull();
      const { entries } = await store.auditLog({ limit: 1 });
      expect(entries.map((e) => [e.kind, e.op, e.actor, e.after?.id, e.note])).toEqual([['approval', 'restore', 'regular:1', approval.id, 'unused again: the request that used it failed']]);
      // Unused again: the next submission uses it.
      expect((await store.submitApproval(approvalRequest(), T0 + 4 * MIN)).outcome).toBe('approved');
    });

    it('approved: exactly one submission is allowed, then it asks again', async () => {
      const store = await fresh();
      const { approval } = await store.submitApproval(approvalRequest(), T0);
      const decided = await store.decideApproval(approval.id, { status: 'approved', reason: 'ok for Q4', ...by }, T0 + MIN);
      expect(decided).toEqual({ decided: expect.objectContaining({ id: approval.id, status: 'approved', decided_by: 'admin:abcd1234', reason: 'ok for Q4', decided_at: '2026-01-01T12:01:00.000Z' }) });
      const used = await store.submitApproval(approvalRequest(), T0 + 2 * MIN);
      expect(used.outcome).toBe('approved');
      expect(used.approval).toMatchObject({ id: approval.id, status: 'approved', used_at: '2026-01-01T12:02:00.000Z' });
      const next = await store.submitApproval(approvalRequest(), T0 + 2 * MIN);
      expect(next.outcome).toBe('created');
      expect(next.approval.id).not.toBe(approval.id);
      // A different step never uses another step's approval.
      const { approval: a2 } = await store.submitApproval(approvalRequest({ digest: 'small' }), T0);
      await store.decideApproval(a2.id, { status: 'approved', reason: null, ...by }, T0);
      expect((await store.submitApproval(approvalRequest({ digest: 'large' }), T0)).outcome).toBe('created');
    });

    it('an approval not used within its timeout of the decision is not used', async () => {
      const store = await fresh();
      const { approval } = await store.submitApproval(approvalRequest({ timeout_ms: MIN }), T0);
      await store.decideApproval(approval.id, { status: 'approved', reason: null, ...by }, T0 + 30_000);
      expect((await store.submitApproval(approvalRequest({ timeout_ms: MIN }), T0 + 30_000 + MIN + 1)).outcome).toBe('created');
    });

    it('denied: the next submission is denied with the reason', async () => {
      const store = await fresh();
      const { approval } = await store.submitApproval(approvalRequest(), T0);
      await store.decideApproval(approval.id, { status: 'denied', reason: 'over budget', ...by }, T0 + MIN);
      const denied = await store.submitApproval(approvalRequest(), T0 + 2 * MIN);
      expect(denied.outcome).toBe('denied');
      expect(denied.approval).toMatchObject({ id: approval.id, status: 'denied', reason: 'over budget' });
    });

    it('expired: reads as expired, the submission after expiry is denied, then a new question', async () => {
      const store = await fresh();
      const { approval } = await store.submitApproval(approvalRequest(), T0);
      const late = T0 + 15 * MIN;
      expect((await store.getApproval(approval.id, late))!.status).toBe('expired');
      expect((await store.listApprovals({ status: 'pending', limit: 10 }, late)).map((a) => a.id)).toEqual([]);
      expect((await store.listApprovals({ status: 'expired', limit: 10 }, late)).map((a) => a.id)).toEqual([approval.id]);
      const expired = await store.submitApproval(approvalRequest(), late);
      expect(expired.outcome).toBe('expired');
      expect(expired.approval.status).toBe('expired');
      expect((await store.submitApproval(approvalRequest(), late)).outcome).toBe('created');
      // Deciding an expired approval is a conflict, never a late approval.
      expect(await store.decideApproval(approval.id, { status: 'approved', reason: null, ...by }, late)).toEqual({ conflict: expect.objectContaining({ status: 'expired' }) });
    });

    it('decides once: a second decision is a conflict, an unknown id null', async () => {
      const store = await fresh();
      const { approval } = await store.submitApproval(approvalRequest(), T0);
      expect(await store.decideApproval(approval.id, { status: 'denied', reason: 'no', ...by }, T0)).toHaveProperty('decided');
      expect(await store.decideApproval(approval.id, { status: 'approved', reason: null, ...by }, T0)).toEqual({ conflict: expect.objectContaining({ status: 'denied', reason: 'no' }) });
      expect(await store.decideApproval('apr_unknown', { status: 'approved', reason: null, ...by }, T0)).toBeNull();
      expect(await store.getApproval('apr_unknown', T0)).toBeNull();
    });

    it('writes each question, decision and use to the audit log', async () => {
      const store = await fresh();
      const { approval } = await store.submitApproval(approvalRequest(), T0);
      await store.decideApproval(approval.id, { status: 'approved', reason: 'fine', ...by }, T0);
      await store.submitApproval(approvalRequest(), T0);
      const { entries } = await store.auditLog({ limit: 10 });
      expect(entries.map((e) => [e.kind, e.op, e.actor, e.control_id, e.control_name, e.agent_name, e.after?.id, e.note])).toEqual([
        ['approval', 'use', 'regular:12345678', null, 'large-payments', 'bot', approval.id, null],
        ['approval', 'approve', 'admin:abcd1234', null, 'large-payments', 'bot', approval.id, 'fine'],
        ['approval', 'ask', 'regular:12345678', null, 'large-payments', 'bot', approval.id, null],
      ]);
      // Nothing about a control changed: the store's revision stays.
      expect(await store.revision()).toBe(0);
    });

    it('lists newest first, by status and agent', async () => {
      const store = await fresh();
      const a = (await store.submitApproval(approvalRequest({ digest: 'a' }), T0)).approval;
      const b = (await store.submitApproval(approvalRequest({ digest: 'b', agent_name: 'other' }), T0)).approval;
      await store.decideApproval(a.id, { status: 'approved', reason: null, ...by }, T0);
      expect((await store.listApprovals({ limit: 10 }, T0)).map((x) => x.id)).toEqual([b.id, a.id]);
      expect((await store.listApprovals({ status: 'approved', limit: 10 }, T0)).map((x) => x.id)).toEqual([a.id]);
      expect((await store.listApprovals({ status: 'pending', limit: 10 }, T0)).map((x) => x.id)).toEqual([b.id]);
      expect((await store.listApprovals({ agent_name: 'other', limit: 10 }, T0)).map((x) => x.id)).toEqual([b.id]);
      expect(await store.listApprovals({ limit: 1 }, T0)).toHaveLength(1);
    });

    it('concurrent submissions of one step: one question, and an approval is used once', async () => {
      const store = await fresh();
      const twin = openTwin ? await openTwin(store) : store;
      if (twin !== store) opened.push(twin);
      const firsts = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? twin : store).submitApproval(approvalRequest(), T0)));
      expect(new Set(firsts.map((f) => f.approval.id)).size).toBe(1);
      expect(firsts.filter((f) => f.outcome === 'created')).toHaveLength(1);
      await twin.decideApproval(firsts[0]!.approval.id, { status: 'approved', reason: null, ...by }, T0);
      const runs = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? twin : store).submitApproval(approvalRequest(), T0 + 1)));
      expect(runs.filter((r) => r.outcome === 'approved')).toHaveLength(1);
      // The others met the one new question the used approval left.
      expect(new Set(runs.filter((r) => r.outcome !== 'approved').map((r) => r.approval.id)).size).toBe(1);
    });
  });
}
