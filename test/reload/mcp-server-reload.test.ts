/** Hot reload of kind: McpServer documents: pinned, re-pinned and unpinned with the directory. */
import { rmSync } from 'node:fs';
import { stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { compileControls, type CompiledControlSet } from '../../src/engine/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { mcpToolFingerprint } from '../../src/gitops/canonical.js';
import { createReloader } from '../../src/reload/index.js';
import { ControlSetCache } from '../../src/server/control-sets.js';
import { openStore } from '../../src/store/open-store.js';
import { tempControlsDir, writeIn } from './helpers.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0)) await fn();
});

function pinned(description: string): string {
  const input_schema = { type: 'object' };
  return stringify({ kind: 'McpServer', name: 'fs', transport: { command: ['fs-server'] }, tools: [{ name: 'read', description, input_schema, fingerprint: mcpToolFingerprint({ description, input_schema }) }] });
}

describe('hot reload of McpServer documents', () => {
  it('stores, replaces and deletes the pinned server with the directory, owned by watch mode', async () => {
    const { root, dir } = tempControlsDir({ 'fs.yaml': pinned('reads') });
    const store = await openStore(':memory:');
    const registry = createDefaultRegistry();
    const cache = new ControlSetCache<CompiledControlSet>(store, (controls) => compileControls(controls.map((c) => ({ control_id: c.control_id, name: c.name, data: c.data })), registry));
    cleanups.push(async () => {
      await store.close();
      rmSync(root, { recursive: true, force: true });
    });
    const reloader = createReloader({ dir, store, controlSets: cache, registry });
    expect(await reloader.reloadNow()).toMatchObject({ result: 'success' });
    const first = await store.getMcpServerByName('fs');
    expect(first).toMatchObject({ tools: [{ name: 'read', description: 'reads' }], source: expect.stringContaining('fs.yaml:1') });
    expect(first!.managed_by).toMatch(/^watch:/);
    writeIn(dir, 'fs.yaml', pinned('reads files'));
    expect(await reloader.reloadNow()).toMatchObject({ result: 'success' });
    expect((await store.getMcpServerByName('fs'))!.tools[0]!.description).toBe('reads files');
    writeIn(dir, 'fs.yaml', pinned('reads files').replace(/fingerprint: .*/, `fingerprint: sha256:${'0'.repeat(64)}`));
    expect(await reloader.reloadNow()).toMatchObject({ result: 'failure' });
    expect((await store.getMcpServerByName('fs'))!.tools[0]!.description).toBe('reads files');
    rmSync(`${dir}/fs.yaml`);
    writeIn(dir, 'other.yaml', 'kind: Agent\nagent_name: bot\ncontrols: []\n');
    expect(await reloader.reloadNow()).toMatchObject({ result: 'success' });
    expect(await store.getMcpServerByName('fs')).toBeNull();
  });
});
