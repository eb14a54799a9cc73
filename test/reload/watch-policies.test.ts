/**
 * Attack review: hot reload must apply `kind: Policy` documents like controls. A watched
 * policy guards agents registering later, follows edits and removals of its file, and is
 * read-only through the API (PUT/DELETE /policies, POST /changes answer 409 read_only).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { agentDoc, decide, sqlControl, startWatchedServer, statusOf, waitForReload, waitForStatus, type WatchedServer } from './helpers.js';

const DROP = '(?i)drop\\s+table';

const policyDoc = (name: string, controls: string[], selector: string) =>
  ['kind: Policy', `name: ${name}`, `controls: [${controls.join(', ')}]`, 'agents:', `  ${selector}`, ''].join('\n');

let server: WatchedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function register(s: WatchedServer, agent: string, labels: Record<string, string>) {
  const res = await s.app.inject({ method: 'POST', url: '/api/v1/agents/initAgent', payload: { agent_name: agent, labels } });
  expect(res.statusCode, res.body).toBeLessThan(300);
}

describe('watch mode applies kind: Policy (real directory, real watcher, real SQLite)', () => {
  it('a watched policy guards agents from the start, follows an edit and a removal of its file', async () => {
    server = await startWatchedServer({
      'sql.yaml': sqlControl('block-drop', DROP),
      'agents.yaml': agentDoc('other-bot', ['block-drop']),
      'policy.yaml': policyDoc('pci', ['block-drop'], 'match_labels: { pci: "true" }'),
    });
    const s = server;
    const stored = await s.store.getPolicyByName('pci');
    expect(stored).toMatchObject({ name: 'pci', controls: ['block-drop'], managed_by: s.hot.reloader.managedBy, source: `${s.dir}/policy.yaml:1` });

    // An agent registering later with matching labels is guarded from its first evaluation.
    await register(s, 'card-bot', { pci: 'true' });
    await register(s, 'plain-bot', { pci: 'false' });
    expect(await decide(s.app, 'card-bot', 'DROP TABLE users')).toBe('deny');
    expect(await decide(s.app, 'plain-bot', 'DROP TABLE users')).toBe('allow');

    // Editing the selector moves the guard.
    let before = await statusOf(s.app);
    s.write('policy.yaml', policyDoc('pci', ['block-drop'], 'match_labels: { pci: "false" }'));
    await waitForReload(s.app, before, 'success');
    expect(await decide(s.app, 'plain-bot', 'DROP TABLE users')).toBe('deny');
    expect(await decide(s.app, 'card-bot', 'DROP TABLE users')).toBe('allow');

    // Removing the document deletes the policy (after the removal is confirmed).
    before = await statusOf(s.app);
    rmSync(join(s.dir, 'policy.yaml'));
    await expect.poll(async () => (await s.store.getPolicyByName('pci')) === null, { interval: 20, timeout: 10_000 }).toBe(true);
    expect(await decide(s.app, 'plain-bot', 'DROP TABLE users')).toBe('allow');
    expect((await statusOf(s.app)).reloads.success).toBeGreaterThan(before.reloads.success);
  });

  it('a policy removed from its file is not deleted by a half-written read: the removal waits for confirmation', async () => {
    server = await startWatchedServer({
      'sql.yaml': sqlControl('block-drop', DROP),
      'policy.yaml': policyDoc('pci', ['block-drop'], 'match_labels: { pci: "true" }'),
    });
    const s = server;
    const before = await statusOf(s.app);
    rmSync(join(s.dir, 'policy.yaml'));
    const after = await waitForReload(s.app, before, 'success');
    // The first reload that no longer sees the policy defers the delete instead of unguarding at once.
    expect(after.pending_removals).toBeGreaterThan(0);
    expect(await s.store.getPolicyByName('pci')).not.toBeNull();
  });

  it('a watched policy is read-only through the API: PUT, DELETE and POST /changes answer 409 read_only naming its file', async () => {
    server = await startWatchedServer({
      'sql.yaml': sqlControl('block-drop', DROP),
      'policy.yaml': policyDoc('pci', ['block-drop'], 'match_labels: { pci: "true" }'),
    });
    const s = server;
    const policy = (await s.store.getPolicyByName('pci'))!;
    const body = { name: 'pci', controls: ['block-drop'], agents: { match_labels: { pci: 'nope' } } };
    const put = await s.app.inject({ method: 'PUT', url: `/api/v1/policies/${policy.policy_id}`, payload: body });
    expect(put.statusCode).toBe(409);
    expect(JSON.parse(put.body)).toMatchObject({ error_code: 'read_only' });
    expect(put.body).toContain(`${s.dir}/policy.yaml`);
    const del = await s.app.inject({ method: 'DELETE', url: `/api/v1/policies/${policy.policy_id}` });
    expect(del.statusCode).toBe(409);
    expect(JSON.parse(del.body)).toMatchObject({ error_code: 'read_only' });
    for (const change of [{ op: 'upsert_policy', policy: body }, { op: 'delete_policy', name: 'pci' }]) {
      const res = await s.app.inject({ method: 'POST', url: '/api/v1/changes', payload: { changes: [change] } });
      expect(res.statusCode, res.body).toBe(409);
      expect(JSON.parse(res.body)).toMatchObject({ error_code: 'read_only' });
      expect(res.body).toContain(`${s.dir}/policy.yaml`);
    }
    // A fresh policy cannot be created under the taken name either, and nothing changed.
    const create = await s.app.inject({ method: 'PUT', url: '/api/v1/policies', payload: body });
    expect(create.statusCode).toBe(409);
    expect(await s.store.getPolicyByName('pci')).toMatchObject({ agents: { match_labels: { pci: 'true' } }, managed_by: s.hot.reloader.managedBy });
  });
  it('removing a control and the policy binding it in one change converges: both go together', async () => {
    server = await startWatchedServer({
      'sql.yaml': sqlControl('block-drop', DROP),
      'other.yaml': sqlControl('other', 'nothing-matches-this'),
      'policy.yaml': policyDoc('pci', ['block-drop'], 'match_labels: { pci: "true" }'),
    });
    const s = server;
    await register(s, 'card-bot', { pci: 'true' });
    expect(await decide(s.app, 'card-bot', 'DROP TABLE users')).toBe('deny');
    rmSync(join(s.dir, 'policy.yaml'));
    rmSync(join(s.dir, 'sql.yaml'));
    await expect.poll(async () => (await s.store.getControlByName('block-drop')) === null, { interval: 20, timeout: 10_000 }).toBe(true);
    expect(await s.store.getPolicyByName('pci')).toBeNull();
    expect((await statusOf(s.app)).state).toBe('ok');
    expect(await decide(s.app, 'card-bot', 'DROP TABLE users')).toBe('allow');
  });

  it('a directory keeping a policy that names a control it removed is refused whole; the guard stays', async () => {
    server = await startWatchedServer({
      'sql.yaml': sqlControl('block-drop', DROP),
      'policy.yaml': policyDoc('pci', ['block-drop'], 'match_labels: { pci: "true" }'),
    });
    const s = server;
    await register(s, 'card-bot', { pci: 'true' });
    const before = await statusOf(s.app);
    rmSync(join(s.dir, 'sql.yaml'));
    const after = await waitForReload(s.app, before, 'failure');
    expect(after.errors.map((e) => e.code)).toContain('unknown_control');
    expect(await s.store.getControlByName('block-drop')).not.toBeNull();
    expect(await decide(s.app, 'card-bot', 'DROP TABLE users')).toBe('deny');
  });

  it('a watched control that a policy made through the API binds is not deleted by a reload: the reload fails naming the policy', async () => {
    server = await startWatchedServer({
      'sql.yaml': sqlControl('block-drop', DROP),
      'other.yaml': sqlControl('other', 'nothing-matches-this'),
    });
    const s = server;
    const made = await s.app.inject({ method: 'PUT', url: '/api/v1/policies', payload: { name: 'by-hand', controls: ['block-drop'], agents: { match_labels: { pci: 'true' } } } });
    expect(made.statusCode, made.body).toBe(201);
    await register(s, 'card-bot', { pci: 'true' });
    expect(await decide(s.app, 'card-bot', 'DROP TABLE users')).toBe('deny');
    rmSync(join(s.dir, 'sql.yaml'));
    const failed = await waitForStatus(s.app, (st) => st.state === 'error', 'the refused reload');
    expect(failed.errors[0]?.message).toContain('control "block-drop" cannot be deleted: policy "by-hand" binds it');
    expect(await s.store.getControlByName('block-drop')).not.toBeNull();
    expect(await decide(s.app, 'card-bot', 'DROP TABLE users')).toBe('deny');
    // Taking the control out of the policy lets the next reload converge.
    const id = (await s.store.getPolicyByName('by-hand'))!.policy_id;
    const unbound = await s.app.inject({ method: 'PUT', url: `/api/v1/policies/${id}`, payload: { name: 'by-hand', controls: ['other'], agents: { match_labels: { pci: 'true' } } } });
    expect(unbound.statusCode).toBe(200);
    s.write('other.yaml', sqlControl('other', 'still-nothing'));
    await expect.poll(async () => (await s.store.getControlByName('block-drop')) === null, { interval: 20, timeout: 10_000 }).toBe(true);
    expect(await decide(s.app, 'card-bot', 'DROP TABLE users')).toBe('allow');
  });
});
