/**
 * The behaviour every Store must have, as one suite run against each implementation
 * (SQLite file, SQLite :memory:, PostgreSQL). `open` gives a fresh, empty store.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ControlData, ObservabilityEvent } from '../../src/model/index.js';
import { StoreError, type EventRollup, type Store } from '../../src/store/types.js';

export function controlData(overrides: Partial<ControlData> = {}): ControlData {
  return {
    enabled: true,
    execution: 'server',
    scope: { stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: 'drop table' } },
    action: { decision: 'deny' },
    ...overrides,
  };
}

let eventSeq = 0;
export function event(overrides: Partial<ObservabilityEvent> = {}): ObservabilityEvent {
  eventSeq += 1;
  return {
    control_execution_id: `ce-${eventSeq}`,
    trace_id: 'trace-1',
    span_id: `span-${eventSeq}`,
    agent_name: 'bot',
    control_id: 1,
    control_name: 'c1',
    check_stage: 'pre',
    applies_to: 'tool',
    action: 'deny',
    matched: true,
    confidence: 1,
    timestamp: '2025-01-01T12:00:00.000Z',
    execution_duration_ms: 2,
    evaluator_name: 'regex',
    selector_path: 'input',
    error_message: null,
    metadata: null,
    ...overrides,
  };
}

/** The shadow counts of a stats row for a control that never ran in shadow mode. */
export const NO_SHADOW = { shadow_executions: 0, shadow_matches: 0, shadow_errors: 0, would_deny: 0, would_steer: 0 };

/** An event as a store returns it: mode and set revision always set, an example only when one was kept. */
export function stored(e: ObservabilityEvent): ObservabilityEvent & { example: string | null } {
  return { mode: 'enforce', set_revision: null, session_id: null, example: null, ...e };
}

export function rollup(overrides: Partial<EventRollup> = {}): EventRollup {
  return {
    bucket: '2025-01-01T12:00:00.000Z',
    agent_name: 'bot',
    control_id: 1,
    control_name: 'c1',
    check_stage: 'pre',
    applies_to: 'tool',
    evaluator_name: 'regex',
    count: 1,
    total_duration_ms: 2,
    ...overrides,
  };
}

async function storeError(promise: Promise<unknown>): Promise<StoreError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(StoreError);
    return error as StoreError;
  }
  throw new Error('expected the store to reject');
}

export function defineStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    describe('controls', () => {
      it('creates, reads, updates and deletes a control', async () => {
        const created = await store.createControl({ name: 'sql', data: controlData(), managed_by: 'gitops', source: 'a.yaml:1' });
        expect(created.control_id).toBeGreaterThan(0);
        expect(created).toMatchObject({ name: 'sql', enabled: true, managed_by: 'gitops', source: 'a.yaml:1' });
        expect(created.data).toEqual(controlData());
        expect(await store.getControl(created.control_id)).toEqual(created);
        expect(await store.getControlByName('sql')).toEqual(created);

        const renamed = await store.updateControl(created.control_id, { name: 'sql-2', source: null });
        expect(renamed).toMatchObject({ control_id: created.control_id, name: 'sql-2', source: null, managed_by: 'gitops' });
        expect(renamed.data).toEqual(controlData());
        expect(await store.getControlByName('sql')).toBeNull();

        expect(await store.deleteControl(created.control_id)).toEqual({ unlinked_agents: [] });
        expect(await store.getControl(created.control_id)).toBeNull();
        expect((await storeError(store.deleteControl(created.control_id))).kind).toBe('not_found');
        expect((await storeError(store.updateControl(created.control_id, { name: 'x' }))).kind).toBe('not_found');
      });

      it('creates a control without data', async () => {
        const created = await store.createControl({ name: 'empty' });
        expect(created).toMatchObject({ enabled: true, data: null, managed_by: null, source: null });
      });

      it('rejects a duplicate name on create and on rename', async () => {
        await store.createControl({ name: 'a' });
        const b = await store.createControl({ name: 'b' });
        expect((await storeError(store.createControl({ name: 'a' }))).kind).toBe('conflict');
        expect((await storeError(store.updateControl(b.control_id, { name: 'a' }))).kind).toBe('conflict');
        expect((await store.getControl(b.control_id))?.name).toBe('b');
        expect(await store.listAllControls()).toHaveLength(2);
      });

      it('keeps enabled in one place: data, PATCH and reads agree', async () => {
        const off = await store.createControl({ name: 'off', data: controlData({ enabled: false }) });
        expect(off.enabled).toBe(false);
        expect(off.data?.enabled).toBe(false);

        const patched = await store.updateControl(off.control_id, { enabled: true });
        expect(patched.enabled).toBe(true);
        expect(patched.data?.enabled).toBe(true);
        expect((await store.getControl(off.control_id))?.data?.enabled).toBe(true);

        const rewritten = await store.updateControl(off.control_id, { data: controlData({ enabled: false, description: 'd' }) });
        expect(rewritten.enabled).toBe(false);
        expect(rewritten.data).toEqual(controlData({ enabled: false, description: 'd' }));

        // Without data the column still holds the state, and setting data later adopts the data's value.
        const bare = await store.createControl({ name: 'bare' });
        const disabled = await store.updateControl(bare.control_id, { enabled: false });
        expect(disabled).toMatchObject({ enabled: false, data: null });
        const withData = await store.updateControl(bare.control_id, { data: controlData({ enabled: true }) });
        expect(withData.enabled).toBe(true);
        const cleared = await store.updateControl(bare.control_id, { data: null });
        expect(cleared).toMatchObject({ enabled: true, data: null });
      });

      it('pages by cursor with a total', async () => {
        const ids: number[] = [];
        for (let i = 0; i < 5; i++) ids.push((await store.createControl({ name: `c${i}` })).control_id);

        const first = await store.listControls({ limit: 2 });
        expect(first.controls.map((c) => c.control_id)).toEqual(ids.slice(0, 2));
        expect(first).toMatchObject({ has_more: true, next_cursor: ids[1], total: 5 });

        const second = await store.listControls({ cursor: first.next_cursor!, limit: 2 });
        expect(second.controls.map((c) => c.control_id)).toEqual(ids.slice(2, 4));
        expect(second.has_more).toBe(true);

        const last = await store.listControls({ cursor: second.next_cursor!, limit: 2 });
        expect(last.controls.map((c) => c.control_id)).toEqual(ids.slice(4));
        expect(last).toMatchObject({ has_more: false, next_cursor: null, total: 5 });

        // Exactly one full page: no phantom next page.
        expect(await store.listControls({ limit: 5 })).toMatchObject({ has_more: false, next_cursor: null });
        // A cursor past the end is an empty page, not an error.
        expect(await store.listControls({ cursor: ids[4]!, limit: 2 })).toMatchObject({
          controls: [],
          has_more: false,
          next_cursor: null,
          total: 5,
        });
        // A cursor of a deleted control still continues after it.
        await store.deleteControl(ids[2]!);
        const afterDeleted = await store.listControls({ cursor: ids[2]!, limit: 10 });
        expect(afterDeleted.controls.map((c) => c.control_id)).toEqual(ids.slice(3));
        expect(afterDeleted.total).toBe(4);
      });

      it('pages an empty table', async () => {
        expect(await store.listControls({ limit: 20 })).toEqual({ controls: [], has_more: false, next_cursor: null, total: 0 });
      });
    });

    describe('agents and links', () => {
      it('upserts, reads and patches agents', async () => {
        const first = await store.upsertAgent({
          agent_name: 'bot',
          agent_description: 'helps',
          steps: [{ type: 'tool', name: 'run_sql' }],
          metadata: { team: 'a' },
          managed_by: 'gitops',
        });
        expect(first.created).toBe(true);
        expect(first.agent).toMatchObject({
          agent_name: 'bot',
          agent_description: 'helps',
          agent_version: null,
          steps: [{ type: 'tool', name: 'run_sql' }],
          metadata: { team: 'a' },
          managed_by: 'gitops',
        });

        const second = await store.upsertAgent({ agent_name: 'bot', agent_version: '2' });
        expect(second.created).toBe(false);
        expect(second.agent).toMatchObject({ agent_description: null, agent_version: '2', steps: [], managed_by: 'gitops' });
        expect(second.agent.created_at).toBe(first.agent.created_at);

        const patched = await store.patchAgent('bot', { agent_description: 'new', metadata: null });
        expect(patched).toMatchObject({ agent_description: 'new', agent_version: '2', metadata: null });
        expect(await store.getAgent('bot')).toEqual(patched);
        expect(await store.getAgent('nobody')).toBeNull();
        expect((await storeError(store.patchAgent('nobody', {}))).kind).toBe('not_found');

        await store.upsertAgent({ agent_name: 'alpha' });
        expect((await store.listAgents()).map((a) => a.agent_name)).toEqual(['alpha', 'bot']);
      });

      it('deletes an agent with its links, keeps the controls, and records the delete', async () => {
        await store.upsertAgent({ agent_name: 'bot', agent_description: 'helps' });
        await store.upsertAgent({ agent_name: 'other' });
        const a = await store.createControl({ name: 'a', data: controlData() });
        const b = await store.createControl({ name: 'b', data: controlData() });
        await store.linkControl('bot', a.control_id);
        await store.linkControl('bot', b.control_id);
        await store.linkControl('other', a.control_id);
        const before = await store.revision();
        expect(await store.deleteAgent('bot')).toEqual({ unlinked_controls: [a.control_id, b.control_id] });
        expect(await store.revision()).toBeGreaterThan(before);
        expect(await store.getAgent('bot')).toBeNull();
        expect(await store.listLinks()).toEqual([{ agent_name: 'other', control_id: a.control_id }]);
        expect((await store.listAllControls()).map((c) => c.name)).toEqual(['a', 'b']);
        expect(await store.agentControlSet('bot')).toBeNull();
        const [entry] = (await store.auditLog({ limit: 1 })).entries;
        expect(entry).toMatchObject({ kind: 'agent', op: 'delete', agent_name: 'bot', after: null, note: 'unlinked from a, b' });
        expect(entry?.before).toMatchObject({ agent_description: 'helps' });
        expect((await storeError(store.deleteAgent('bot'))).kind).toBe('not_found');
      });

      it('links and unlinks idempotently, and refuses unknown ends', async () => {
        await store.upsertAgent({ agent_name: 'bot' });
        const c = await store.createControl({ name: 'c', data: controlData() });
        expect(await store.linkControl('bot', c.control_id)).toBe(true);
        expect(await store.linkControl('bot', c.control_id)).toBe(false);
        expect(await store.listLinks()).toEqual([{ agent_name: 'bot', control_id: c.control_id }]);
        expect((await store.listAgentControls('bot')).map((x) => x.name)).toEqual(['c']);
        expect(await store.agentsOfControl(c.control_id)).toEqual(['bot']);

        expect(await store.unlinkControl('bot', c.control_id)).toBe(true);
        expect(await store.unlinkControl('bot', c.control_id)).toBe(false);
        expect(await store.listLinks()).toEqual([]);

        expect((await storeError(store.linkControl('ghost', c.control_id))).kind).toBe('not_found');
        expect((await storeError(store.linkControl('bot', c.control_id + 1000))).kind).toBe('not_found');
      });

      it('deleting a control unlinks it and names the agents', async () => {
        await store.upsertAgent({ agent_name: 'a' });
        await store.upsertAgent({ agent_name: 'b' });
        const c = await store.createControl({ name: 'c' });
        const keep = await store.createControl({ name: 'keep' });
        await store.linkControl('b', c.control_id);
        await store.linkControl('a', c.control_id);
        await store.linkControl('a', keep.control_id);
        expect(await store.deleteControl(c.control_id)).toEqual({ unlinked_agents: ['a', 'b'] });
        expect(await store.listLinks()).toEqual([{ agent_name: 'a', control_id: keep.control_id }]);
        expect(await store.listAgentControls('b')).toEqual([]);
      });
    });

    describe('applyChanges', () => {
      it('applies a batch, resolving names inside the transaction', async () => {
        await store.upsertAgent({ agent_name: 'old' });
        const gone = await store.createControl({ name: 'gone' });
        await store.linkControl('old', gone.control_id);

        const result = await store.applyChanges([
          { op: 'create_control', control: { name: 'new', data: controlData(), managed_by: 'gitops' } },
          { op: 'upsert_agent', agent: { agent_name: 'bot' } },
          { op: 'link', agent_name: 'bot', control_name: 'new' },
          { op: 'update_control', name: 'new', patch: { enabled: false } },
          { op: 'delete_control', name: 'gone' },
        ]);
        expect(result.touched_agents).toEqual(['bot', 'old']);
        const created = await store.getControlByName('new');
        expect(created).toMatchObject({ enabled: false, managed_by: 'gitops' });
        expect(await store.listLinks()).toEqual([{ agent_name: 'bot', control_id: created!.control_id }]);

        await store.applyChanges([{ op: 'unlink', agent_name: 'bot', control_name: 'new' }]);
        expect(await store.listLinks()).toEqual([]);
      });

      it('is all or nothing: a failing change in the middle leaves nothing changed', async () => {
        await store.upsertAgent({ agent_name: 'bot' });
        const existing = await store.createControl({ name: 'existing', data: controlData() });
        const before = {
          controls: await store.listAllControls(),
          agents: await store.listAgents(),
          links: await store.listLinks(),
          revision: await store.revision(),
        };
        const error = await storeError(
          store.applyChanges([
            { op: 'create_control', control: { name: 'fresh' } },
            { op: 'link', agent_name: 'bot', control_name: 'existing' },
            { op: 'update_control', name: 'existing', patch: { enabled: false } },
            { op: 'link', agent_name: 'bot', control_name: 'missing' },
            { op: 'upsert_agent', agent: { agent_name: 'later' } },
          ]),
        );
        expect(error.kind).toBe('not_found');
        expect(error.message).toContain('change 4');
        expect(error.message).toContain('missing');
        expect(await store.listAllControls()).toEqual(before.controls);
        expect(await store.listAgents()).toEqual(before.agents);
        expect(await store.listLinks()).toEqual(before.links);
        expect(await store.revision()).toBe(before.revision);
        expect((await store.getControl(existing.control_id))?.enabled).toBe(true);

        const conflict = await storeError(
          store.applyChanges([
            { op: 'create_control', control: { name: 'one' } },
            { op: 'create_control', control: { name: 'existing' } },
          ]),
        );
        expect(conflict.kind).toBe('conflict');
        expect(conflict.message).toContain('change 2');
        expect(await store.getControlByName('one')).toBeNull();
      });

      it('with an expected revision, applies only at that revision and answers the revision after the batch', async () => {
        const start = await store.revision();
        const first = await store.applyChanges([{ op: 'create_control', control: { name: 'a' } }], undefined, { expectedRevision: start });
        expect(first.revision).toBeGreaterThan(start);
        expect(first.revision).toBe(await store.revision());
        // A second writer that planned against `start` loses, whole: nothing of its batch is written.
        const stale = await storeError(
          store.applyChanges([{ op: 'create_control', control: { name: 'b' } }, { op: 'upsert_agent', agent: { agent_name: 'x' } }], undefined, { expectedRevision: start }),
        );
        expect(stale.kind).toBe('stale');
        expect(stale.message).toMatch(/changed since this plan was made/);
        expect(await store.getControlByName('b')).toBeNull();
        expect(await store.getAgent('x')).toBeNull();
        expect(await store.revision()).toBe(first.revision);
        // Chained on the answered revision it goes on.
        const second = await store.applyChanges([{ op: 'create_control', control: { name: 'b' } }], undefined, { expectedRevision: first.revision });
        expect(second.revision).toBeGreaterThan(first.revision);
        // Two writers racing from the same revision: exactly one wins.
        const racing = await Promise.allSettled(
          ['c', 'd'].map((name) => store.applyChanges([{ op: 'create_control', control: { name } }], undefined, { expectedRevision: second.revision })),
        );
        expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const lost = racing.find((r) => r.status === 'rejected');
        expect((lost as PromiseRejectedResult).reason).toMatchObject({ kind: 'stale' });
        // Without one, a batch runs whatever the revision.
        expect((await store.applyChanges([{ op: 'create_control', control: { name: 'e' } }])).revision).toBe(await store.revision());
      });
    });

    describe('revision', () => {
      it('grows on writes and only on writes', async () => {
        const r0 = await store.revision();
        const c = await store.createControl({ name: 'c' });
        const r1 = await store.revision();
        expect(r1).toBeGreaterThan(r0);

        await store.getControl(c.control_id);
        await store.listControls({ limit: 10 });
        await store.listAgents();
        await store.listLinks();
        await store.insertEvents([event()]);
        await store.queryEvents({ limit: 10, offset: 0 });
        expect(await store.revision()).toBe(r1);

        await store.upsertAgent({ agent_name: 'bot' });
        const r2 = await store.revision();
        expect(r2).toBeGreaterThan(r1);
        await store.linkControl('bot', c.control_id);
        const r3 = await store.revision();
        expect(r3).toBeGreaterThan(r2);
        await store.updateControl(c.control_id, { enabled: false });
        const r4 = await store.revision();
        expect(r4).toBeGreaterThan(r3);
        await store.applyChanges([{ op: 'unlink', agent_name: 'bot', control_name: 'c' }]);
        expect(await store.revision()).toBeGreaterThan(r4);
      });
    });

    describe('events', () => {
      it('stores every field and reads it back', async () => {
        const e = event({
          timestamp: '2025-01-01T12:00:00.123Z',
          metadata: { k: [1, 2] },
          error_message: 'boom',
          evaluator_name: null,
          selector_path: null,
          confidence: 0.25,
          execution_duration_ms: 1.5,
        });
        await store.insertEvents([e]);
        expect(await store.queryEvents({ limit: 10, offset: 0 })).toEqual({ events: [stored(e)], total: 1 });
      });

      it('keeps the session of each event and filters by it; sessionless events read back null', async () => {
        const t = (m: number) => new Date(Date.UTC(2025, 0, 1, 12, m)).toISOString();
        // A session id is free text: quotes, percent signs and non-Latin letters are kept as
        // they are and matched exactly (no LIKE, no prefix match).
        const odd = "s'1%_é";
        await store.insertEvents([
          event({ control_execution_id: 's1', timestamp: t(1), session_id: 'sess-a' }),
          event({ control_execution_id: 's2', timestamp: t(2), session_id: odd }),
          event({ control_execution_id: 's3', timestamp: t(3), session_id: 'sess-a', agent_name: 'other' }),
          event({ control_execution_id: 's4', timestamp: t(4) }),
          event({ control_execution_id: 's5', timestamp: t(5), session_id: null }),
        ]);
        const ids = async (q: Partial<Parameters<Store['queryEvents']>[0]>) =>
          (await store.queryEvents({ limit: 100, offset: 0, ...q })).events.map((e) => [e.control_execution_id, e.session_id]);
        expect(await ids({ session_id: 'sess-a' })).toEqual([['s3', 'sess-a'], ['s1', 'sess-a']]);
        expect(await ids({ session_id: 'sess-a', agent_name: 'bot' })).toEqual([['s1', 'sess-a']]);
        expect(await ids({ session_id: odd })).toEqual([['s2', odd]]);
        expect(await ids({ session_id: 'sess-%' })).toEqual([]);
        expect(await ids({ session_id: 'sess' })).toEqual([]);
        expect(await ids({})).toEqual([['s5', null], ['s4', null], ['s3', 'sess-a'], ['s2', odd], ['s1', 'sess-a']]);
        expect((await store.queryEvents({ session_id: 'sess-a', limit: 1, offset: 0 })).total).toBe(2);
      });

      it('normalises timestamps with an offset to UTC', async () => {
        await store.insertEvents([event({ timestamp: '2025-01-01T13:00:00+01:00' })]);
        const page = await store.queryEvents({ limit: 1, offset: 0 });
        expect(page.events[0]?.timestamp).toBe('2025-01-01T12:00:00.000Z');
      });

      it('filters by every field, newest first, with a total', async () => {
        const t = (m: number) => new Date(Date.UTC(2025, 0, 1, 12, m)).toISOString();
        await store.insertEvents([
          event({ control_execution_id: 'e1', timestamp: t(1), agent_name: 'a', control_id: 1, action: 'deny', matched: true, check_stage: 'pre', trace_id: 't1' }),
          event({ control_execution_id: 'e2', timestamp: t(2), agent_name: 'a', control_id: 2, action: 'log', matched: false, check_stage: 'post', trace_id: 't1' }),
          event({ control_execution_id: 'e3', timestamp: t(3), agent_name: 'b', control_id: 1, action: 'steer', matched: true, check_stage: 'pre', trace_id: 't2' }),
          event({ control_execution_id: 'e4', timestamp: t(4), agent_name: 'b', control_id: 3, action: 'deny', matched: false, check_stage: 'post', trace_id: 't3' }),
        ]);
        const ids = async (q: Partial<Parameters<Store['queryEvents']>[0]>) => {
          const page = await store.queryEvents({ limit: 100, offset: 0, ...q });
          return { ids: page.events.map((e) => e.control_execution_id), total: page.total };
        };
        expect(await ids({})).toEqual({ ids: ['e4', 'e3', 'e2', 'e1'], total: 4 });
        expect(await ids({ agent_name: 'a' })).toEqual({ ids: ['e2', 'e1'], total: 2 });
        expect(await ids({ control_ids: [1, 3] })).toEqual({ ids: ['e4', 'e3', 'e1'], total: 3 });
        expect(await ids({ actions: ['deny'] })).toEqual({ ids: ['e4', 'e1'], total: 2 });
        expect(await ids({ matched: true })).toEqual({ ids: ['e3', 'e1'], total: 2 });
        expect(await ids({ matched: false })).toEqual({ ids: ['e4', 'e2'], total: 2 });
        expect(await ids({ stages: ['post'] })).toEqual({ ids: ['e4', 'e2'], total: 2 });
        expect(await ids({ trace_id: 't1' })).toEqual({ ids: ['e2', 'e1'], total: 2 });
        expect(await ids({ start_time: t(2), end_time: t(4) })).toEqual({ ids: ['e3', 'e2'], total: 2 });
        expect(await ids({ agent_name: 'b', actions: ['deny', 'steer'], matched: true })).toEqual({ ids: ['e3'], total: 1 });
        expect(await ids({ control_ids: [] })).toEqual({ ids: [], total: 0 });
        // Paging keeps the total of the whole match.
        expect(await ids({ limit: 2, offset: 1 })).toEqual({ ids: ['e3', 'e2'], total: 4 });
      });

      it('stats count errors apart from matches, so executions add up', async () => {
        await store.createControl({ name: 'current-name' });
        const c = (await store.getControlByName('current-name'))!.control_id;
        const old = '2025-01-01T00:00:00.000Z';
        const recent = '2025-01-02T00:00:00.000Z';
        await store.insertEvents([
          event({ control_id: c, control_name: 'old-name', timestamp: recent, matched: true, action: 'deny', execution_duration_ms: 2 }),
          event({ control_id: c, timestamp: recent, matched: true, action: 'deny', execution_duration_ms: 4 }),
          // A sampled non-match row: stats count non-matches from rollups only, never from rows.
          event({ control_id: c, timestamp: recent, matched: false, action: 'deny', execution_duration_ms: 6 }),
          // An error counts as an error even when on_error made it "match".
          event({ control_id: c, timestamp: recent, matched: true, action: 'deny', error_message: 'x', execution_duration_ms: 8 }),
          event({ control_id: c, timestamp: old, matched: true, action: 'deny' }),
          event({ control_id: 999, control_name: 'deleted-control', timestamp: recent, matched: true, action: 'log', agent_name: 'other', execution_duration_ms: 1 }),
        ]);
        await store.insertRollups([
          rollup({ control_id: c, control_name: 'old-name', bucket: recent, count: 1, total_duration_ms: 6 }),
          rollup({ control_id: c, bucket: old, count: 7, total_duration_ms: 7 }),
        ]);
        const rows = await store.controlStats({ since: '2025-01-01T12:00:00.000Z' });
        expect(rows).toEqual([
          {
            control_id: c,
            control_name: 'current-name',
            executions: 4,
            matches: 2,
            non_matches: 1,
            errors: 1,
            selector_missing: 0,
            actions: { deny: 2 },
            avg_duration_ms: 5,
            ...NO_SHADOW,
          },
          {
            control_id: 999,
            control_name: 'deleted-control',
            executions: 1,
            matches: 1,
            non_matches: 0,
            errors: 0,
            selector_missing: 0,
            actions: { log: 1 },
            avg_duration_ms: 1,
            ...NO_SHADOW,
          },
        ]);
        for (const row of rows) expect(row.executions).toBe(row.matches + row.non_matches + row.errors);

        expect((await store.controlStats({ since: '2025-01-01T12:00:00.000Z', agent_name: 'other' })).map((r) => r.control_id)).toEqual([999]);
        expect((await store.controlStats({ since: '2025-01-01T12:00:00.000Z', control_id: c }))[0]?.executions).toBe(4);
        expect((await store.controlStats({ since: '2024-12-31T00:00:00.000Z', control_id: c }))[0]).toMatchObject({
          executions: 12,
          non_matches: 8,
        });
        expect(await store.controlStats({ since: '2025-02-01T00:00:00.000Z' })).toEqual([]);
      });

      it('upserts rollups: the same minute and key adds count and duration', async () => {
        await store.insertRollups([
          rollup({ bucket: '2025-01-01T12:00:10.000Z', count: 2, total_duration_ms: 3 }),
          // Same minute and key in the same call: merged, not refused.
          rollup({ bucket: '2025-01-01T12:00:50.000Z', count: 1, total_duration_ms: 1 }),
        ]);
        await store.insertRollups([rollup({ count: 4, total_duration_ms: 4 }), rollup({ evaluator_name: null, count: 5, total_duration_ms: 0 })]);
        const [row] = await store.controlStats({ since: '2025-01-01T12:00:00.000Z' });
        expect(row).toEqual({
          control_id: 1,
          control_name: 'c1',
          executions: 12,
          matches: 0,
          non_matches: 12,
          errors: 0,
          selector_missing: 0,
          actions: {},
          avg_duration_ms: 8 / 12,
          ...NO_SHADOW,
        });
      });

      it('keeps a non-match whose selector found nothing as a row: queried back, counted in non_matches and selector_missing', async () => {
        const t = '2025-01-01T12:05:00.000Z';
        await store.insertEvents([
          event({ control_id: 1, agent_name: 'a', timestamp: t, matched: false, selector_missing: true }),
          event({ control_id: 1, agent_name: 'a', timestamp: t, matched: false, selector_missing: true }),
          event({ control_id: 1, agent_name: 'a', timestamp: t, matched: true, action: 'deny' }),
        ]);
        await store.insertRollups([rollup({ control_id: 1, agent_name: 'a', bucket: t, count: 3, total_duration_ms: 0 })]);
        for (const query of [{}, { agent_name: 'a' }, { control_id: 1 }]) {
          const [row] = await store.controlStats({ since: '2025-01-01T12:00:00.000Z', ...query });
          expect(row).toMatchObject({ executions: 6, matches: 1, non_matches: 5, errors: 0, selector_missing: 2 });
        }
        const page = await store.queryEvents({ matched: false, limit: 10, offset: 0 });
        expect(page.events.map((e) => e.selector_missing)).toEqual([true, true]);
        const matched = await store.queryEvents({ matched: true, limit: 10, offset: 0 });
        expect(matched.events[0]).not.toHaveProperty('selector_missing');
      });

      it('stats hold executions = matches + non_matches + errors over rows and rollups, by agent and control', async () => {
        const t = '2025-01-01T12:05:00.000Z';
        await store.insertEvents([
          event({ control_id: 1, agent_name: 'a', timestamp: t, matched: true, action: 'deny', execution_duration_ms: 10 }),
          event({ control_id: 2, control_name: 'c2', agent_name: 'b', timestamp: t, matched: false, error_message: 'boom', action: 'log', execution_duration_ms: 10 }),
        ]);
        await store.insertRollups([
          rollup({ control_id: 1, agent_name: 'a', bucket: t, count: 3, total_duration_ms: 2 }),
          rollup({ control_id: 1, agent_name: 'b', bucket: t, count: 5, total_duration_ms: 4 }),
          rollup({ control_id: 2, control_name: 'c2', agent_name: 'b', bucket: t, count: 2, total_duration_ms: 2 }),
          // A control seen only through rollups still gets a row.
          rollup({ control_id: 3, control_name: 'quiet', agent_name: 'a', bucket: t, count: 9, total_duration_ms: 9 }),
        ]);
        const all = await store.controlStats({ since: '2025-01-01T12:00:00.000Z' });
        expect(all.map((r) => [r.control_id, r.control_name, r.matches, r.non_matches, r.errors])).toEqual([
          [1, 'c1', 1, 8, 0],
          [2, 'c2', 0, 2, 1],
          [3, 'quiet', 0, 9, 0],
        ]);
        for (const row of all) expect(row.executions).toBe(row.matches + row.non_matches + row.errors);
        expect(all[0]?.avg_duration_ms).toBeCloseTo(16 / 9);
        const agentA = await store.controlStats({ since: '2025-01-01T12:00:00.000Z', agent_name: 'a' });
        expect(agentA.map((r) => [r.control_id, r.executions])).toEqual([[1, 4], [3, 9]]);
        const agentB1 = await store.controlStats({ since: '2025-01-01T12:00:00.000Z', agent_name: 'b', control_id: 1 });
        expect(agentB1.map((r) => [r.control_id, r.non_matches])).toEqual([[1, 5]]);
        const only2 = await store.controlStats({ since: '2025-01-01T12:00:00.000Z', control_id: 2 });
        expect(only2.map((r) => [r.control_id, r.executions])).toEqual([[2, 3]]);
      });

      it('counts rollups whose minute starts at or after since', async () => {
        await store.insertRollups([
          rollup({ bucket: '2025-01-01T11:59:30.000Z', count: 1 }),
          rollup({ bucket: '2025-01-01T12:00:00.000Z', count: 10 }),
          rollup({ bucket: '2025-01-01T12:01:59.000Z', count: 100 }),
        ]);
        const nonMatches = async (since: string) => (await store.controlStats({ since }))[0]?.non_matches ?? 0;
        expect(await nonMatches('2025-01-01T11:59:00.000Z')).toBe(111);
        expect(await nonMatches('2025-01-01T12:00:00.000Z')).toBe(110);
        // Minute granularity: a window starting inside a minute leaves that minute out.
        expect(await nonMatches('2025-01-01T12:00:30.000Z')).toBe(100);
        expect(await nonMatches('2025-01-01T12:02:00.000Z')).toBe(0);
      });

      it('prunes rollups with the events', async () => {
        await store.insertEvents([event({ timestamp: '2025-01-01T12:00:00.000Z' })]);
        await store.insertRollups([
          rollup({ bucket: '2025-01-01T11:00:00.000Z', count: 4 }),
          rollup({ bucket: '2025-01-01T12:00:00.000Z', count: 6 }),
          rollup({ bucket: '2025-01-01T13:00:00.000Z', count: 8 }),
        ]);
        // One event row and two rollup rows are older than 12:30.
        expect(await store.pruneEvents('2025-01-01T12:30:00.000Z')).toBe(3);
        const [row] = await store.controlStats({ since: '2025-01-01T00:00:00.000Z' });
        expect(row).toMatchObject({ executions: 8, non_matches: 8, matches: 0 });
        expect(await store.pruneEvents('2025-01-01T12:30:00.000Z')).toBe(0);
      });

      it('prunes events before a time, in batches', async () => {
        const events = Array.from({ length: 25 }, (_, i) =>
          event({ timestamp: new Date(Date.UTC(2025, 0, 1, 0, i)).toISOString() }),
        );
        await store.insertEvents(events);
        expect(await store.pruneEvents(new Date(Date.UTC(2025, 0, 1, 0, 20)).toISOString())).toBe(20);
        expect((await store.queryEvents({ limit: 100, offset: 0 })).total).toBe(5);
        expect(await store.pruneEvents(new Date(Date.UTC(2025, 0, 1, 0, 20)).toISOString())).toBe(0);
      });

      it('stores every event of a batch of no round size, each with its own fields, in order', async () => {
        const events = Array.from({ length: 103 }, (_, i) =>
          event({
            control_execution_id: `e${i}`,
            timestamp: new Date(Date.UTC(2025, 0, 1, 12, 0, 0, i)).toISOString(),
            agent_name: `agent-${i % 5}`,
            control_id: (i % 7) + 1,
            control_name: `control-${i % 7}`,
            matched: i % 2 === 0,
            action: i % 3 === 0 ? 'deny' : 'log',
            error_message: i % 11 === 0 ? `error ${i}` : null,
            metadata: i % 13 === 0 ? { i } : null,
            execution_duration_ms: i / 4,
          }),
        );
        await store.insertEvents(events);
        const page = await store.queryEvents({ limit: 200, offset: 0 });
        expect(page.total).toBe(103);
        expect(page.events).toEqual(events.map(stored).reverse());
      });

      it('refuses a batch holding a row the table cannot keep, stores none of it, and takes the next batch', async () => {
        await store.insertEvents([event({ control_execution_id: 'before' })]);
        const events = Array.from({ length: 40 }, (_, i) => event({ control_execution_id: `e${i}` }));
        // A row no client can send (the schema refuses it), as a store bug would write it.
        events[21] = { ...events[21]!, control_name: null as unknown as string };
        await expect(store.insertEvents(events)).rejects.toThrow();
        expect((await store.queryEvents({ limit: 100, offset: 0 })).events.map((e) => e.control_execution_id)).toEqual(['before']);
        await store.insertEvents([event({ control_execution_id: 'after' })]);
        expect((await store.queryEvents({ limit: 100, offset: 0 })).total).toBe(2);
      });

      it('inserts a large batch in one call', async () => {
        const events = Array.from({ length: 12_000 }, (_, i) => event({ control_id: (i % 3) + 1 }));
        await store.insertEvents(events);
        expect((await store.queryEvents({ limit: 1, offset: 0 })).total).toBe(12_000);
        const stats = await store.controlStats({ since: '2025-01-01T00:00:00.000Z' });
        expect(stats.map((r) => r.executions)).toEqual([4000, 4000, 4000]);
      });
    });
  });
}
