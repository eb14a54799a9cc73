import { renameSync, rmSync, unlinkSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { InvalidWatchDirectoryError } from '../../src/reload/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { startHotReload } from '../../src/reload/index.js';
import { openStore } from '../../src/store/open-store.js';
import { buildApp } from '../../src/server/app.js';
import { assembleServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import {
  agentDoc,
  decide,
  sqlControl,
  startWatchedServer,
  statusOf,
  tempControlsDir,
  waitForReload,
  waitForStatus,
  type WatchedServer,
} from './helpers.js';

const DROP = '(?i)drop\\s+table';
const TRUNCATE = '(?i)truncate';

let server: WatchedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(extra: Record<string, string> = {}): Promise<WatchedServer> {
  server = await startWatchedServer({
    'sql.yaml': sqlControl('block-drop', DROP),
    'agents.yaml': agentDoc('sql-bot', ['block-drop']),
    ...extra,
  });
  return server;
}

async function controlNamed(s: WatchedServer, name: string) {
  return s.store.getControlByName(name);
}

describe('watch mode (real directory, real watcher, real SQLite)', () => {
  it('loads the directory at start: evaluation decides per the files, and the controls are owned by the watch', async () => {
    const s = await start();
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('deny');
    expect(await decide(s.app, 'sql-bot', 'SELECT 1')).toBe('allow');
    const control = await controlNamed(s, 'block-drop');
    expect(control?.managed_by).toBe(s.hot.reloader.managedBy);
    expect(control?.managed_by).toMatch(/^watch:/);
    expect(control?.source).toBe(`${s.dir}/sql.yaml:1`);
    const status = await statusOf(s.app);
    expect(status).toMatchObject({ watching: s.dir, state: 'ok', reloads: { success: 1, failure: 0 }, errors: [] });
    expect(status.last_good_revision).toMatch(/^[0-9a-f]{12}$/);
  });

  it('applies an edited pattern: the next evaluation sees the new decision', async () => {
    const s = await start();
    const before = await statusOf(s.app);
    s.write('sql.yaml', sqlControl('block-drop', TRUNCATE));
    const after = await waitForReload(s.app, before, 'success');
    expect(after.last_good_revision).not.toBe(before.last_good_revision);
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('allow');
    expect(await decide(s.app, 'sql-bot', 'TRUNCATE users')).toBe('deny');
    expect(s.notices.at(-1)).toMatchObject({ result: 'success', revision: after.last_good_revision, errors: [] });
  });

  it('stores each reload’s writes in history as the watched directory, and refuses restore naming the file (409)', async () => {
    const s = await start();
    const before = await statusOf(s.app);
    s.write('sql.yaml', sqlControl('block-drop', TRUNCATE));
    await waitForReload(s.app, before, 'success');
    const control = (await controlNamed(s, 'block-drop'))!;
    const { entries } = await s.store.controlHistory(control.control_id, { limit: 10 });
    expect(entries.map((e) => [e.op, e.source, e.actor])).toEqual([
      ['update', 'watch', s.hot.reloader.managedBy],
      ['link', 'watch', s.hot.reloader.managedBy],
      ['create', 'watch', s.hot.reloader.managedBy],
    ]);
    expect(entries[0]!.actor).toBe(`watch:${s.dir}`);
    const restore = await s.app.inject({ method: 'POST', url: `/api/v1/controls/${control.control_id}/restore`, payload: { revision: entries[2]!.revision } });
    expect(restore.statusCode).toBe(409);
    expect(JSON.parse(restore.body).detail).toBe(
      `control "block-drop" is managed by watch:${s.dir} (defined in ${s.dir}/sql.yaml:1): revert the change to ${s.dir}/sql.yaml in git; the watched directory reloads it`,
    );
    expect(await decide(s.app, 'sql-bot', 'TRUNCATE users')).toBe('deny');
  });

  it('applies a new file with a new control and its link', async () => {
    const s = await start();
    const before = await statusOf(s.app);
    s.write('truncate.yaml', sqlControl('block-truncate', TRUNCATE));
    s.write('agents.yaml', agentDoc('sql-bot', ['block-drop', 'block-truncate']));
    await waitForStatus(s.app, (st) => st.reloads.success > before.reloads.success && st.state === 'ok', 'the new control');
    // Two writes may land in one reload or two; wait until both are in.
    await expect.poll(() => decide(s.app, 'sql-bot', 'TRUNCATE logs'), { timeout: 30_000 }).toBe('deny');
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('deny');
    expect((await controlNamed(s, 'block-truncate'))?.source).toBe(`${s.dir}/truncate.yaml:1`);
  });

  it('deletes the controls of a removed file and unlinks them', async () => {
    const s = await start({ 'truncate.yaml': sqlControl('block-truncate', TRUNCATE) });
    await s.store.getAgent('sql-bot');
    // Link the second control too, then remove its file and its link together.
    s.write('agents.yaml', agentDoc('sql-bot', ['block-drop', 'block-truncate']));
    await expect.poll(() => decide(s.app, 'sql-bot', 'TRUNCATE logs'), { timeout: 30_000 }).toBe('deny');
    const linked = await statusOf(s.app);
    s.write('agents.yaml', agentDoc('sql-bot', ['block-drop']));
    unlinkSync(join(s.dir, 'truncate.yaml'));
    await waitForStatus(s.app, (st) => st.reloads.success > linked.reloads.success && st.state === 'ok', 'the deletion');
    await expect.poll(async () => controlNamed(s, 'block-truncate'), { timeout: 30_000 }).toBeNull();
    expect((await s.store.listAgentControls('sql-bot')).map((c) => c.name)).toEqual(['block-drop']);
    expect(await decide(s.app, 'sql-bot', 'TRUNCATE logs')).toBe('allow');
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('deny');
  });

  it('unlinks watched controls from an agent whose document was removed', async () => {
    const s = (server = await startWatchedServer({ 'sql.yaml': `${sqlControl('block-drop', DROP)}---\n${agentDoc('sql-bot', ['block-drop'])}` }));
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('deny');
    const before = await statusOf(s.app);
    s.write('sql.yaml', sqlControl('block-drop', DROP));
    // An unlink is applied once it is planned again after the confirmation delay.
    await waitForStatus(s.app, (st) => st.reloads.success > before.reloads.success && st.pending_removals === 0, 'the unlink');
    expect(await s.store.listAgentControls('sql-bot')).toEqual([]);
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('allow');
  });

  it('a renamed file changes no decision, only the source', async () => {
    const s = await start();
    const id = (await controlNamed(s, 'block-drop'))!.control_id;
    const before = await statusOf(s.app);
    renameSync(join(s.dir, 'sql.yaml'), join(s.dir, 'database.yml'));
    await expect.poll(async () => (await controlNamed(s, 'block-drop'))?.source, { timeout: 30_000 }).toBe(`${s.dir}/database.yml:1`);
    const after = await waitForStatus(s.app, (st) => st.state === 'ok' && st.reloads.success > before.reloads.success, 'the rename');
    expect(after.last_good_revision).not.toBe(before.last_good_revision);
    // Same control (same id, so links and statistics survive), same decision.
    expect((await controlNamed(s, 'block-drop'))?.control_id).toBe(id);
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('deny');
  });

  it('reloads on an atomic save (write a temp file, rename it over the original)', async () => {
    const s = await start();
    const before = await statusOf(s.app);
    const temp = join(s.dir, '.sql.yaml.tmp-1234');
    writeFileSync(temp, sqlControl('block-drop', TRUNCATE));
    renameSync(temp, join(s.dir, 'sql.yaml'));
    await waitForReload(s.app, before, 'success');
    expect(await decide(s.app, 'sql-bot', 'TRUNCATE users')).toBe('deny');
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('allow');
  });

  it('keeps the last good set on an invalid edit, reports it, and recovers when fixed', async () => {
    const s = await start();
    const good = await statusOf(s.app);
    s.write('sql.yaml', 'kind: Control\nname: block-drop\nscope: [unclosed\n');
    const bad = await waitForStatus(s.app, (st) => st.state === 'error', 'the error state');
    expect(bad.last_good_revision).toBe(good.last_good_revision);
    expect(bad.reloads.failure).toBe(1);
    const syntax = bad.errors.find((e) => e.file === `${s.dir}/sql.yaml`);
    expect(syntax).toMatchObject({ severity: 'error', code: 'yaml_syntax' });
    expect(syntax!.line).toBeGreaterThanOrEqual(3);
    expect(syntax!.column).toBeGreaterThanOrEqual(1);
    // The old decisions are still served.
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('deny');
    // Counted as failed, and announced on the live stream with file:line:col.
    const metrics = await s.app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toMatch(/guard_reloads_total\{result="failure"\} 1/);
    const notice = s.notices.at(-1)!;
    expect(notice.result).toBe('failure');
    expect(notice.errors.some((line) => new RegExp(`^${s.dir}/sql\\.yaml:\\d+:\\d+`).test(line))).toBe(true);

    s.write('sql.yaml', sqlControl('block-drop', TRUNCATE));
    const fixed = await waitForStatus(s.app, (st) => st.state === 'ok', 'recovery');
    expect(fixed.errors).toEqual([]);
    expect(fixed.last_good_revision).not.toBe(good.last_good_revision);
    expect(await decide(s.app, 'sql-bot', 'TRUNCATE users')).toBe('deny');
  });

  it('keeps the last good set when a schema error appears (unknown field) and names the field', async () => {
    const s = await start();
    s.write('sql.yaml', sqlControl('block-drop', DROP).replace('action:', 'actoin: {}\naction:'));
    const bad = await waitForStatus(s.app, (st) => st.state === 'error', 'the error state');
    expect(bad.errors.some((e) => e.file === `${s.dir}/sql.yaml` && e.line === 12)).toBe(true);
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('deny');
  });

  it('answers 409 naming the file when the API writes a watched control', async () => {
    const s = await start();
    const id = (await controlNamed(s, 'block-drop'))!.control_id;
    const patch = await s.app.inject({ method: 'PATCH', url: `/api/v1/controls/${id}`, payload: { enabled: false } });
    expect(patch.statusCode).toBe(409);
    expect(patch.headers['content-type']).toMatch(/application\/problem\+json/);
    const body = JSON.parse(patch.body) as { error_code: string; detail: string };
    expect(body.error_code).toBe('read_only');
    expect(body.detail).toContain(`${s.dir}/sql.yaml:1`);
    const del = await s.app.inject({ method: 'DELETE', url: `/api/v1/controls/${id}` });
    expect(del.statusCode).toBe(409);
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('deny');
  });

  it('fails while the directory is gone and recovers when it comes back', async () => {
    const s = await start();
    rmSync(s.dir, { recursive: true, force: true });
    const gone = await waitForStatus(s.app, (st) => st.state === 'error', 'the missing directory');
    expect(gone.errors[0]?.file).toBe(s.dir);
    expect(await decide(s.app, 'sql-bot', 'DROP TABLE users')).toBe('deny');
    mkdirSync(s.dir);
    s.write('sql.yaml', sqlControl('block-drop', TRUNCATE));
    s.write('agents.yaml', agentDoc('sql-bot', ['block-drop']));
    await waitForStatus(s.app, (st) => st.state === 'ok', 'recovery');
    await expect.poll(() => decide(s.app, 'sql-bot', 'TRUNCATE users'), { timeout: 30_000 }).toBe('deny');
  });
});

describe('watch mode at start', () => {
  it('refuses an invalid directory with its diagnostics (file:line:column)', async () => {
    const { root, dir } = tempControlsDir({ 'bad.yaml': 'kind: Control\nname: x\naction: [\n' });
    const store = await openStore(':memory:');
    const registry = createDefaultRegistry();
    const app = await buildApp({ store, config: loadConfig({}, { watchDir: dir }), registry });
    try {
      const error = await startHotReload({ dir, store, controlSets: app.controlSets, registry }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidWatchDirectoryError);
      const invalid = error as InvalidWatchDirectoryError;
      expect(invalid.diagnostics.length).toBeGreaterThan(0);
      expect(invalid.message).toMatch(new RegExp(`${dir}/bad\\.yaml:\\d+:\\d+`));
      expect(invalid.exitCode).toBe(1);
      // Nothing was written.
      expect(await store.listAllControls()).toEqual([]);
    } finally {
      await app.close();
      await store.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('answers 404 at the status endpoint when not watching', async () => {
    const { app, close } = await assembleServer(loadConfig({}, { databaseUrl: ':memory:' }), { registry: createDefaultRegistry(), observability: false });
    try {
      const res = await app.inject({ method: 'GET', url: '/api/v1/reload/status' });
      expect(res.statusCode).toBe(404);
      expect(JSON.parse(res.body)).toMatchObject({ status: 404, error_code: 'not_found' });
    } finally {
      await close();
    }
  });
});
