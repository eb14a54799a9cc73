import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compileControls, type CompiledControlSet } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { createReloader } from '../../src/reload/index.js';
import { ControlSetCache } from '../../src/server/control-sets.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/types.js';
import { agentDoc, sqlControl, tempControlsDir, writeIn } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0)) await fn();
});

async function setup(files: Record<string, string>) {
  const { root, dir } = tempControlsDir(files);
  const store: Store = await openStore(':memory:');
  const registry = createDefaultRegistry();
  const builds: string[] = [];
  const cache = new ControlSetCache<CompiledControlSet>(store, (controls) => {
    builds.push(controls.map((c) => c.name).join(','));
    return compileControls(controls.map((c) => ({ control_id: c.control_id, name: c.name, data: c.data })), registry);
  });
  cleanups.push(async () => {
    await store.close();
    rmSync(root, { recursive: true, force: true });
  });
  return { dir, store, registry, cache, builds };
}

describe('reloader (no watcher: reloadNow called directly)', () => {
  it('applies in one transaction, swaps the compiled sets in, and reports unchanged when nothing changed', async () => {
    const { dir, store, registry, cache, builds } = await setup({ 'a.yaml': `${sqlControl('c1', 'drop')}---\n${agentDoc('bot', ['c1'])}` });
    const reloader = createReloader({ dir, store, controlSets: cache, registry });
    const first = await reloader.reloadNow();
    expect(first).toMatchObject({ result: 'success', touched_agents: ['bot'] });
    expect(first.operations).toBe(3); // create control, create agent, link
    // Built by the reload, not by a request: the cache already holds it.
    expect(cache.peek('bot')).toBeDefined();
    expect(builds).toEqual(['c1']);
    const revision = await store.revision();

    const again = await reloader.reloadNow();
    expect(again).toMatchObject({ result: 'unchanged', operations: 0, revision: first.revision });
    expect(await store.revision()).toBe(revision);
    expect(reloader.status().reloads).toEqual({ success: 1, failure: 0 });
  });

  it('runs reloads one at a time: calls during a reload collapse into one more run that sees the last state', async () => {
    const { dir, store, registry, cache } = await setup({ 'a.yaml': `${sqlControl('c1', 'drop')}---\n${agentDoc('bot', ['c1'])}` });
    const reloader = createReloader({ dir, store, controlSets: cache, registry });
    const firstRun = reloader.reloadNow();
    writeIn(dir, 'a.yaml', `${sqlControl('c2', 'truncate')}---\n${agentDoc('bot', ['c2'])}`);
    const second = reloader.reloadNow();
    const third = reloader.reloadNow();
    expect(third).toBe(second);
    const results = await Promise.all([firstRun, second, third]);
    expect(results[0].result).toBe('success');
    // Whatever the first run read, the queued run applied the file as it is now.
    expect((await store.listAgentControls('bot')).map((c) => c.name)).toEqual(['c2']);
    expect(await store.getControlByName('c1')).toBeNull();
    expect(reloader.status().reloads.success).toBeLessThanOrEqual(2);
  });

  it('an invalid directory writes nothing and keeps the cached sets', async () => {
    const { dir, store, registry, cache } = await setup({ 'a.yaml': `${sqlControl('c1', 'drop')}---\n${agentDoc('bot', ['c1'])}` });
    const reloader = createReloader({ dir, store, controlSets: cache, registry });
    await reloader.reloadNow();
    const set = cache.peek('bot');
    const revision = await store.revision();
    writeIn(dir, 'a.yaml', sqlControl('c1', '(unclosed'));
    const failed = await reloader.reloadNow();
    expect(failed.result).toBe('failure');
    expect(failed.diagnostics.some((d) => d.file === join(dir, 'a.yaml') && d.field.startsWith('evaluator'))).toBe(true);
    expect(await store.revision()).toBe(revision);
    expect(cache.peek('bot')).toBe(set);
    expect(reloader.status()).toMatchObject({ state: 'error', reloads: { success: 1, failure: 1 } });
  });

  it('the "unchanged" shortcut does not ignore the error state: restoring exactly the last good file after a bad edit returns status to ok', async () => {
    const good = `${sqlControl('c1', 'drop')}---\n${agentDoc('bot', ['c1'])}`;
    const { dir, store, registry, cache } = await setup({ 'a.yaml': good });
    const notices: string[] = [];
    const observability = { publishReload: (n: { result: string }) => void notices.push(n.result) };
    const reloader = createReloader({ dir, store, controlSets: cache, registry, observability });
    const first = await reloader.reloadNow();
    writeIn(dir, 'a.yaml', sqlControl('c1', '(unclosed'));
    expect((await reloader.reloadNow()).result).toBe('failure');
    expect(reloader.status().state).toBe('error');
    const revision = await store.revision();

    // The store already holds this file's controls: nothing to write, the same revision as
    // last applied. It is still a recovery, not "unchanged".
    writeIn(dir, 'a.yaml', good);
    const restored = await reloader.reloadNow();
    expect(restored).toMatchObject({ result: 'success', revision: first.revision, operations: 0 });
    expect(reloader.status()).toMatchObject({ state: 'ok', errors: [], last_good_revision: first.revision, reloads: { success: 2, failure: 1 } });
    expect(notices).toEqual(['success', 'failure', 'success']);
    expect(await store.revision()).toBe(revision);

    // From ok, the same file again is the shortcut's case.
    expect((await reloader.reloadNow()).result).toBe('unchanged');
  });
});

describe('reloader logs', () => {
  /** Every log call, in order: `level msg` and the fields. */
  function collectingLogger() {
    const lines: string[] = [];
    const fields: Array<Record<string, unknown>> = [];
    const at = (level: string) => (obj: object, msg: string) => {
      lines.push(`${level} ${msg}`);
      fields.push(obj as Record<string, unknown>);
    };
    return { lines, fields, logger: { info: at('info'), warn: at('warn'), error: at('error') } };
  }

  it('logs a failure as one entry listing each problem, and the recovery when the directory is fixed', async () => {
    const { dir, store, registry, cache } = await setup({ 'a.yaml': `${sqlControl('c1', 'drop')}---\n${agentDoc('bot', ['c1'])}` });
    const { lines, fields, logger } = collectingLogger();
    const reloader = createReloader({ dir, store, controlSets: cache, registry, logger });
    const first = await reloader.reloadNow();
    writeIn(dir, 'a.yaml', `${sqlControl('c1', '(unclosed')}---\n${agentDoc('bot', ['c1'])}`);
    await reloader.reloadNow();
    writeIn(dir, 'a.yaml', `${sqlControl('c1', 'truncate')}---\n${agentDoc('bot', ['c1'])}`);
    const fixed = await reloader.reloadNow();
    expect(lines).toEqual([
      `info hot reload applied: revision ${first.revision} (3 changes)`,
      `warn hot reload failed (1 error); still serving revision ${first.revision}`,
      `info hot reload recovered: revision ${fixed.revision} (1 change); the directory is valid again`,
    ]);
    expect(fields[1]!.errors).toEqual([expect.stringMatching(new RegExp(`^${join(dir, 'a.yaml')}:\\d+:\\d+ evaluator\\.config\\.pattern: `))]);
  });

  it('names a removed directory once, without repeating its path', async () => {
    const { dir, store, registry, cache } = await setup({ 'a.yaml': `${sqlControl('c1', 'drop')}---\n${agentDoc('bot', ['c1'])}` });
    const { fields, logger } = collectingLogger();
    const reloader = createReloader({ dir, store, controlSets: cache, registry, logger });
    await reloader.reloadNow();
    rmSync(dir, { recursive: true, force: true });
    await reloader.reloadNow();
    expect(fields[1]!.errors).toEqual([`${dir}: no such directory (removed or renamed?)`]);
  });
});
