/**
 * History, audit, restore, set revisions and shadow-mode stats: the behaviour every
 * Store must have, run against each implementation like store-contract.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChangeEntry, WriteOrigin } from '../../src/model/index.js';
import type { Store } from '../../src/store/types.js';
import { controlData, event, NO_SHADOW, rollup } from './store-contract.js';

const admin: WriteOrigin = { actor: 'admin:3f9a1c2b', source: 'api' };
const apply: WriteOrigin = { actor: 'admin:77aa00ff', source: 'apply' };
const watch: WriteOrigin = { actor: 'watch:/srv/controls', source: 'watch' };

/** Every entry of a control, oldest first, following the pages. */
async function allHistory(store: Store, id: number, pageSize = 2): Promise<ChangeEntry[]> {
  const out: ChangeEntry[] = [];
  let cursor: number | undefined;
  for (;;) {
    const page = await store.controlHistory(id, { cursor, limit: pageSize });
    out.push(...page.entries);
    if (page.next_cursor === null) return out.reverse();
    cursor = page.next_cursor;
  }
}

export function defineHistoryContract(name: string, open: () => Promise<Store>): void {
  describe(`History contract: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    describe('history retention', () => {
      it('prunes entries beyond the newest maxEntries, and entries older than the cutoff', async () => {
        for (let i = 0; i < 12; i++) await store.createControl({ name: `c${i}`, data: controlData() }, admin);
        const all = async () => (await store.auditLog({ limit: 100 })).entries;
        expect(await all()).toHaveLength(12);
        // Nothing is old yet: the age limit removes nothing.
        expect(await store.pruneHistory({ maxEntries: 100, before: new Date(Date.now() - 60_000).toISOString() })).toBe(0);
        expect(await store.pruneHistory({ maxEntries: 5, before: new Date(0).toISOString() })).toBe(7);
        expect((await all()).map((e) => e.control_name)).toEqual(['c11', 'c10', 'c9', 'c8', 'c7']);
        expect(await store.pruneHistory({ maxEntries: 100, before: new Date(Date.now() + 60_000).toISOString() })).toBe(5);
        expect(await all()).toEqual([]);
        // New writes are kept as before.
        await store.createControl({ name: 'after' }, admin);
        expect((await all()).map((e) => e.control_name)).toEqual(['after']);
      });
    });

    describe('history', () => {
      it('stores every write to a control and its links with actor, source, revision and the record before and after', async () => {
        const c = await store.createControl({ name: 'sql', data: controlData() }, admin);
        await store.upsertAgent({ agent_name: 'bot' }, admin);
        await store.linkControl('bot', c.control_id, admin);
        // An idempotent link changes nothing and stores nothing.
        await store.linkControl('bot', c.control_id, admin);
        await store.updateControl(c.control_id, { data: controlData({ mode: 'shadow' }) }, admin);
        await store.unlinkControl('bot', c.control_id, admin);

        const entries = await allHistory(store, c.control_id);
        expect(entries.map((e) => [e.kind, e.op, e.actor, e.source])).toEqual([
          ['control', 'create', 'admin:3f9a1c2b', 'api'],
          ['link', 'link', 'admin:3f9a1c2b', 'api'],
          ['control', 'update', 'admin:3f9a1c2b', 'api'],
          ['link', 'unlink', 'admin:3f9a1c2b', 'api'],
        ]);
        const [create, link, update, unlink] = entries as [ChangeEntry, ChangeEntry, ChangeEntry, ChangeEntry];
        expect(create.before).toBeNull();
        expect(create.after).toEqual({ name: 'sql', enabled: true, data: controlData(), managed_by: null, source: null });
        expect(link).toMatchObject({ agent_name: 'bot', control_name: 'sql', before: { linked: false }, after: { linked: true } });
        expect((update.before?.data as { mode?: string }).mode).toBeUndefined();
        expect((update.after?.data as { mode?: string }).mode).toBe('shadow');
        expect(unlink).toMatchObject({ before: { linked: true }, after: { linked: false } });
        // Revisions grow with the writes, and the last is the store's current revision.
        const revisions = entries.map((e) => e.revision);
        expect([...revisions].sort((a, b) => a - b)).toEqual(revisions);
        expect(revisions.at(-1)).toBe(await store.revision());
        expect(new Date(create.timestamp).getTime()).toBeGreaterThan(Date.now() - 60_000);
      });

      it('pages newest first, and the pages join up without gaps or repeats', async () => {
        const c = await store.createControl({ name: 'paged', data: controlData() });
        for (let i = 0; i < 6; i++) await store.updateControl(c.control_id, { data: controlData({ description: `v${i}` }) });
        const first = await store.controlHistory(c.control_id, { limit: 3 });
        expect(first.entries.map((e) => (e.after?.data as { description?: string }).description)).toEqual(['v5', 'v4', 'v3']);
        expect(first.next_cursor).not.toBeNull();
        const all = await allHistory(store, c.control_id, 3);
        expect(all).toHaveLength(7);
        expect(new Set(all.map((e) => e.id)).size).toBe(7);
        const last = await store.controlHistory(c.control_id, { limit: 7 });
        expect(last.next_cursor).toBeNull();
        // Without an origin the entry names the process itself.
        expect(all[0]).toMatchObject({ actor: 'system', source: 'api', op: 'create' });
      });

      it('keeps a deleted control’s history, the delete included, readable by id', async () => {
        await store.upsertAgent({ agent_name: 'bot' });
        const c = await store.createControl({ name: 'gone', data: controlData() }, admin);
        await store.linkControl('bot', c.control_id, admin);
        await store.deleteControl(c.control_id, admin);
        const entries = await allHistory(store, c.control_id);
        expect(entries.map((e) => e.op)).toEqual(['create', 'link', 'delete']);
        expect(entries[2]).toMatchObject({ after: null, note: 'unlinked from bot', before: { name: 'gone' } });
      });

      it('writes apply and watch batches with their origin, one entry per change', async () => {
        await store.applyChanges(
          [
            { op: 'create_control', control: { name: 'a', data: controlData(), managed_by: 'gitops:default', source: 'controls/a.yaml:1' } },
            { op: 'upsert_agent', agent: { agent_name: 'bot' } },
            { op: 'link', agent_name: 'bot', control_name: 'a' },
          ],
          apply,
        );
        await store.applyChanges([{ op: 'update_control', name: 'a', patch: { data: controlData({ description: 'watched' }) } }], watch);
        const a = (await store.getControlByName('a'))!;
        expect((await allHistory(store, a.control_id)).map((e) => [e.op, e.source, e.actor])).toEqual([
          ['create', 'apply', 'admin:77aa00ff'],
          ['link', 'apply', 'admin:77aa00ff'],
          ['update', 'watch', 'watch:/srv/controls'],
        ]);
        const audit = await store.auditLog({ limit: 10 });
        expect(audit.entries.map((e) => [e.kind, e.op, e.agent_name ?? e.control_name])).toEqual([
          ['control', 'update', 'a'],
          ['link', 'link', 'bot'],
          ['agent', 'create', 'bot'],
          ['control', 'create', 'a'],
        ]);
      });

      it('a batch that fails leaves neither its changes nor their history', async () => {
        const before = (await store.auditLog({ limit: 100 })).entries.length;
        const revision = await store.revision();
        await expect(
          store.applyChanges(
            [
              { op: 'create_control', control: { name: 'first', data: controlData() } },
              { op: 'delete_control', name: 'no-such-control' },
            ],
            apply,
          ),
        ).rejects.toThrow(/no-such-control/);
        expect(await store.getControlByName('first')).toBeNull();
        expect((await store.auditLog({ limit: 100 })).entries).toHaveLength(before);
        expect(await store.revision()).toBe(revision);
      });

      it('records agent writes (register, patch) in the audit log with the agent before and after', async () => {
        await store.upsertAgent({ agent_name: 'bot', agent_version: '1' }, admin);
        await store.patchAgent('bot', { agent_version: '2' }, apply);
        const { entries } = await store.auditLog({ limit: 10 });
        expect(entries.map((e) => [e.kind, e.op, e.actor])).toEqual([
          ['agent', 'update', 'admin:77aa00ff'],
          ['agent', 'create', 'admin:3f9a1c2b'],
        ]);
        expect(entries[0]).toMatchObject({ agent_name: 'bot', before: { agent_version: '1' }, after: { agent_version: '2' } });
      });

      it('filters the audit log by actor and time, and pages it', async () => {
        await store.createControl({ name: 'x' }, admin);
        await store.createControl({ name: 'y' }, watch);
        await store.createControl({ name: 'z' }, admin);
        expect((await store.auditLog({ actor: 'admin:3f9a1c2b', limit: 10 })).entries.map((e) => e.control_name)).toEqual(['z', 'x']);
        expect((await store.auditLog({ since: new Date(Date.now() + 60_000).toISOString(), limit: 10 })).entries).toEqual([]);
        expect((await store.auditLog({ since: new Date(Date.now() - 60_000).toISOString(), limit: 10 })).entries).toHaveLength(3);
        const first = await store.auditLog({ limit: 2 });
        const second = await store.auditLog({ limit: 2, cursor: first.next_cursor! });
        expect([...first.entries, ...second.entries].map((e) => e.control_name)).toEqual(['z', 'y', 'x']);
        expect(second.next_cursor).toBeNull();
      });
    });

    describe('restore', () => {
      it('puts a hand-made control back as it was at a revision, as a new revision', async () => {
        const c = await store.createControl({ name: 'r', data: controlData({ description: 'one' }) }, admin);
        await store.updateControl(c.control_id, { data: controlData({ description: 'two' }) }, admin);
        await store.updateControl(c.control_id, { name: 'r-renamed', enabled: false }, admin);
        const [created] = await allHistory(store, c.control_id);
        const outcome = await store.restoreControl(c.control_id, created!.revision, admin);
        expect(outcome).toMatchObject({ ok: true, changed: true, recreated: false });
        const now = (await store.getControl(c.control_id))!;
        expect(now).toMatchObject({ name: 'r', enabled: true, data: controlData({ description: 'one' }) });
        const last = (await allHistory(store, c.control_id)).at(-1)!;
        expect(last).toMatchObject({ op: 'restore', note: `restored revision ${created!.revision}`, actor: 'admin:3f9a1c2b' });
        expect(last.before).toMatchObject({ name: 'r-renamed', enabled: false });
        // Restoring what is already there writes nothing.
        const revision = await store.revision();
        expect(await store.restoreControl(c.control_id, created!.revision, admin)).toMatchObject({ ok: true, changed: false });
        expect(await store.revision()).toBe(revision);
      });

      it('restores the control as of a link revision too', async () => {
        await store.upsertAgent({ agent_name: 'bot' });
        const c = await store.createControl({ name: 'l', data: controlData({ description: 'at link' }) });
        await store.linkControl('bot', c.control_id);
        await store.updateControl(c.control_id, { data: controlData({ description: 'later' }) });
        const link = (await allHistory(store, c.control_id)).find((e) => e.op === 'link')!;
        expect(await store.restoreControl(c.control_id, link.revision, admin)).toMatchObject({ ok: true, changed: true });
        expect((await store.getControl(c.control_id))!.data?.description).toBe('at link');
      });

      it('brings a deleted control back under its id, unless its name was taken', async () => {
        const c = await store.createControl({ name: 'phoenix', data: controlData() }, admin);
        await store.deleteControl(c.control_id, admin);
        const entries = await allHistory(store, c.control_id);
        expect(await store.restoreControl(c.control_id, entries.at(-1)!.revision, admin)).toEqual({ ok: false, reason: 'deleted_at_revision', name: 'phoenix' });
        const restored = await store.restoreControl(c.control_id, entries[0]!.revision, admin);
        expect(restored).toMatchObject({ ok: true, recreated: true, control: { control_id: c.control_id, name: 'phoenix' } });
        expect((await store.getControl(c.control_id))!.data).toEqual(controlData());

        await store.deleteControl(c.control_id, admin);
        await store.createControl({ name: 'phoenix' });
        expect(await store.restoreControl(c.control_id, entries[0]!.revision, admin)).toEqual({ ok: false, reason: 'name_taken', name: 'phoenix' });
        expect(await store.getControl(c.control_id)).toBeNull();
      });

      it('refuses a revision the control does not have, and controls that apply or watch mode own', async () => {
        const c = await store.createControl({ name: 'owned', data: controlData(), managed_by: 'gitops:default', source: 'controls/sql.yaml:3' }, apply);
        const other = await store.createControl({ name: 'other' }, admin);
        const otherRevision = (await allHistory(store, other.control_id))[0]!.revision;
        expect(await store.restoreControl(c.control_id, otherRevision, admin)).toEqual({ ok: false, reason: 'no_revision' });
        expect(await store.restoreControl(c.control_id, 999_999, admin)).toEqual({ ok: false, reason: 'no_revision' });
        const own = (await allHistory(store, c.control_id))[0]!.revision;
        expect(await store.restoreControl(c.control_id, own, admin)).toEqual({
          ok: false,
          reason: 'managed',
          name: 'owned',
          managed_by: 'gitops:default',
          source: 'controls/sql.yaml:3',
        });
        // A deleted control that watch mode owned comes back only through its file.
        const w = await store.createControl({ name: 'watched', data: controlData(), managed_by: 'watch:/srv/c', source: 'a.yaml:1' }, watch);
        await store.deleteControl(w.control_id, watch);
        const first = (await allHistory(store, w.control_id))[0]!.revision;
        expect(await store.restoreControl(w.control_id, first, admin)).toMatchObject({ ok: false, reason: 'managed', managed_by: 'watch:/srv/c' });
      });
    });

    describe('set revision', () => {
      it('reads an agent’s controls with the revision they are at', async () => {
        expect(await store.agentControlSet('nobody')).toBeNull();
        await store.upsertAgent({ agent_name: 'bot' });
        expect(await store.agentControlSet('bot')).toEqual({ controls: [], sources: new Map(), revision: await store.revision() });
        const a = await store.createControl({ name: 'a', data: controlData() });
        const b = await store.createControl({ name: 'b' });
        await store.linkControl('bot', b.control_id);
        await store.linkControl('bot', a.control_id);
        const set = (await store.agentControlSet('bot'))!;
        expect(set.controls.map((c) => c.name)).toEqual(['a', 'b']);
        expect(set.controls).toEqual(await store.listAgentControls('bot'));
        expect(set.revision).toBe(await store.revision());
        // The entry that linked the last control carries that same revision.
        expect((await allHistory(store, a.control_id)).at(-1)!.revision).toBe(set.revision);
      });
    });

    describe('shadow mode in events and stats', () => {
      const t = '2025-01-01T12:05:00.000Z';
      it('counts what shadow controls would have done apart, next to the usual counts', async () => {
        await store.insertEvents([
          event({ control_id: 1, timestamp: t, matched: true, action: 'deny', mode: 'shadow', set_revision: 7 }),
          event({ control_id: 1, timestamp: t, matched: true, action: 'deny', mode: 'shadow' }),
          event({ control_id: 1, timestamp: t, matched: false, error_message: 'x', action: 'deny', mode: 'shadow' }),
          // After promotion, the same control enforced.
          event({ control_id: 1, timestamp: t, matched: true, action: 'deny', mode: 'enforce' }),
          event({ control_id: 2, control_name: 'steerer', timestamp: t, matched: true, action: 'steer', mode: 'shadow', agent_name: 'other' }),
        ]);
        await store.insertRollups([
          rollup({ control_id: 1, bucket: t, count: 10, total_duration_ms: 0, mode: 'shadow' }),
          rollup({ control_id: 1, bucket: t, count: 4, total_duration_ms: 0 }),
          rollup({ control_id: 2, control_name: 'steerer', agent_name: 'other', bucket: t, count: 5, total_duration_ms: 0, mode: 'shadow' }),
        ]);
        for (const query of [{}, { control_id: 1 }]) {
          const [row] = await store.controlStats({ since: '2025-01-01T12:00:00.000Z', ...query });
          expect(row).toMatchObject({
            control_id: 1,
            executions: 18,
            matches: 3,
            errors: 1,
            non_matches: 14,
            actions: { deny: 3 },
            shadow_executions: 13,
            shadow_matches: 2,
            shadow_errors: 1,
            would_deny: 2,
            would_steer: 0,
          });
        }
        const byAgent = await store.controlStats({ since: '2025-01-01T12:00:00.000Z', agent_name: 'other' });
        expect(byAgent).toEqual([
          expect.objectContaining({ control_id: 2, executions: 6, shadow_executions: 6, shadow_matches: 1, would_steer: 1, would_deny: 0 }),
        ]);
        const [enforcedOnly] = await store.controlStats({ since: '2025-01-01T12:00:00.000Z', agent_name: 'bot', control_id: 1 });
        expect(enforcedOnly).toMatchObject({ shadow_executions: 13, would_deny: 2 });
      });

      it('counts a shadow control’s selector-missing rows as shadow non-matches, and gives them back as such', async () => {
        await store.insertEvents([
          event({ control_execution_id: 'm1', timestamp: t, matched: false, selector_missing: true, mode: 'shadow' }),
          event({ control_execution_id: 'm2', timestamp: t, matched: false, selector_missing: true }),
        ]);
        const [row] = await store.controlStats({ since: '2025-01-01T12:00:00.000Z' });
        expect(row).toMatchObject({ executions: 2, non_matches: 2, selector_missing: 2, shadow_executions: 1, shadow_matches: 0, would_deny: 0 });
        const events = (await store.queryEvents({ limit: 10, offset: 0 })).events;
        expect(events.map((e) => [e.control_execution_id, e.mode, e.selector_missing]).sort()).toEqual([
          ['m1', 'shadow', true],
          ['m2', 'enforce', true],
        ]);
      });

      it('keeps shadow and enforced non-matches of the same minute apart', async () => {
        await store.insertRollups([rollup({ bucket: t, count: 2 }), rollup({ bucket: t, count: 3, mode: 'shadow' })]);
        await store.insertRollups([rollup({ bucket: t, count: 1, mode: 'shadow' })]);
        const [row] = await store.controlStats({ since: '2025-01-01T12:00:00.000Z' });
        expect(row).toEqual(expect.objectContaining({ executions: 6, non_matches: 6, ...NO_SHADOW, shadow_executions: 4 }));
      });

      it('stores the mode, set revision and example, and filters by mode and example', async () => {
        const example = JSON.stringify({ type: 'tool', name: 'run_sql', input: { query: '[MATCHED]' } });
        await store.insertEvents([
          { ...event({ control_execution_id: 's1', timestamp: t, mode: 'shadow', set_revision: 42 }), example },
          event({ control_execution_id: 's2', timestamp: t, mode: 'shadow' }),
          event({ control_execution_id: 'e1', timestamp: t }),
        ]);
        const shadow = await store.queryEvents({ mode: 'shadow', limit: 10, offset: 0 });
        expect(shadow.events.map((e) => e.control_execution_id).sort()).toEqual(['s1', 's2']);
        const withExample = await store.queryEvents({ with_example: true, limit: 10, offset: 0 });
        expect(withExample.events).toEqual([expect.objectContaining({ control_execution_id: 's1', mode: 'shadow', set_revision: 42, example })]);
        expect((await store.queryEvents({ mode: 'enforce', limit: 10, offset: 0 })).events.map((e) => e.control_execution_id)).toEqual(['e1']);
      });
    });
  });
}
