// The change history is bounded while the server runs: GUARD_HISTORY_MAX_ENTRIES and
// GUARD_HISTORY_MAX_AGE_DAYS, with defaults, pruned at start and then every hour.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { assembleServer, type AssembledServer } from '../../src/server/assemble.js';
import { loadConfig } from '../../src/server/config.js';
import { pruneHistoryNow } from '../../src/server/history-retention.js';

let root: string | undefined;
let server: AssembledServer | undefined;
afterEach(async () => {
  await server?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('history retention', () => {
  it('has defaults and reads both settings', () => {
    expect(loadConfig({})).toMatchObject({ historyMaxEntries: 100_000, historyMaxAgeDays: 365 });
    expect(loadConfig({ GUARD_HISTORY_MAX_ENTRIES: '50', GUARD_HISTORY_MAX_AGE_DAYS: '7' })).toMatchObject({ historyMaxEntries: 50, historyMaxAgeDays: 7 });
    expect(() => loadConfig({ GUARD_HISTORY_MAX_ENTRIES: '0' })).toThrow(/GUARD_HISTORY_MAX_ENTRIES/);
  });

  it('a watched directory\'s writes are pruned to the newest entries once the server runs', async () => {
    root = mkdtempSync(join(tmpdir(), 'guardctl-history-'));
    const dir = join(root, 'controls');
    mkdirSync(dir);
    const docs = Array.from({ length: 10 }, (_, i) => `kind: Control\nname: c${i}\nselector: { path: input }\nevaluator: { name: regex, config: { pattern: x${i} } }\naction: { decision: log }\n`);
    writeFileSync(join(dir, 'c.yaml'), docs.join('---\n'));
    const config = loadConfig({ OBSERVABILITY_ENABLED: 'false', GUARD_HISTORY_MAX_ENTRIES: '3' }, { watchDir: dir, databaseUrl: join(root, 'guard.db') });
    server = await assembleServer(config, { registry: createDefaultRegistry(), observability: false });
    const store = server.store;
    await expect.poll(async () => (await store.auditLog({ limit: 100 })).entries.length).toBe(3);
    // And by age: everything written before "now + 1 day" is older than a 1-day limit then.
    expect(await pruneHistoryNow(store, { historyMaxEntries: 100, historyMaxAgeDays: 1 }, Date.now() + 2 * 24 * 60 * 60 * 1000)).toBe(3);
    expect((await store.auditLog({ limit: 100 })).entries).toEqual([]);
  });
});
