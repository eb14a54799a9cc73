/**
 * Watch mode and pinned MCP servers: removing or emptying a `kind: McpServer` file must not
 * lift the pins at once (a gateway would pass every tool through unpinned). An emptied file
 * is an error (the last good state is kept); a deletion waits for confirmation like a
 * control's, so a half-written save never unpins, and a removal that holds is applied a
 * second later. Real directory, real watcher, real SQLite.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { mcpToolFingerprint } from '../../src/gitops/canonical.js';
import { startWatchedServer, statusOf, waitForReload, waitForStatus, type WatchedServer } from './helpers.js';

function pinnedDoc(description = 'reads a file'): string {
  const input_schema = { type: 'object', properties: { path: { type: 'string' } } };
  return stringify({ kind: 'McpServer', name: 'fs', transport: { command: ['fs-server'] }, tools: [{ name: 'read', description, input_schema, fingerprint: mcpToolFingerprint({ description, input_schema }) }] });
}

const AGENTS = 'kind: Agent\nagent_name: bot\ncontrols: []\n';

let server: WatchedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('watch mode: deleting a pinned MCP server waits for confirmation', () => {
  it('a removed McpServer file is not unpinned by the first reload that misses it, then is once the removal holds', async () => {
    server = await startWatchedServer({ 'fs.yaml': pinnedDoc(), 'agents.yaml': AGENTS });
    const s = server;
    expect(await s.store.getMcpServerByName('fs')).toMatchObject({ managed_by: s.hot.reloader.managedBy });
    const before = await statusOf(s.app);
    rmSync(join(s.dir, 'fs.yaml'));
    const first = await waitForReload(s.app, before, 'success');
    expect(first.pending_removals).toBe(1);
    expect(await s.store.getMcpServerByName('fs')).not.toBeNull();
    const res = await s.app.inject({ method: 'GET', url: '/api/v1/mcp-servers/fs' });
    expect(res.statusCode).toBe(200);
    // The reloader looks again by itself: the removal held, so the document goes.
    await expect.poll(async () => s.store.getMcpServerByName('fs'), { interval: 20, timeout: 10_000 }).toBeNull();
    expect((await statusOf(s.app)).pending_removals).toBe(0);
  });

  it('an emptied McpServer file is an error: the document stays pinned', async () => {
    server = await startWatchedServer({ 'fs.yaml': pinnedDoc(), 'agents.yaml': AGENTS });
    const s = server;
    const pinned = (await s.store.getMcpServerByName('fs'))!;
    const before = await statusOf(s.app);
    s.write('fs.yaml', '');
    const failed = await waitForReload(s.app, before, 'failure');
    expect(failed.errors.map((e) => e.message)).toContain('the file holds no YAML document');
    expect(await s.store.getMcpServerByName('fs')).toMatchObject({ mcp_server_id: pinned.mcp_server_id, updated_at: pinned.updated_at });
  });

  it('a file cut before its McpServer document (a save in progress) never unpins, and keeps its id', async () => {
    const whole = `${AGENTS}---\n${pinnedDoc()}`;
    server = await startWatchedServer({ 'all.yaml': whole });
    const s = server;
    const pinned = (await s.store.getMcpServerByName('fs'))!;
    const before = await statusOf(s.app);
    // Valid YAML that lacks its last document: the agent only.
    s.write('all.yaml', AGENTS);
    await waitForStatus(s.app, (st) => st.reloads.success > before.reloads.success && st.pending_removals === 1, 'the deletion to be deferred');
    expect(await s.store.getMcpServerByName('fs')).toMatchObject({ mcp_server_id: pinned.mcp_server_id, updated_at: pinned.updated_at });
    s.write('all.yaml', whole);
    await waitForStatus(s.app, (st) => st.pending_removals === 0, 'the deferred deletion to be dropped');
    // Past the confirmation time the document is still the one pinned, untouched.
    await new Promise((r) => setTimeout(r, 1300));
    expect(await s.store.getMcpServerByName('fs')).toMatchObject({ mcp_server_id: pinned.mcp_server_id, updated_at: pinned.updated_at });
  });

  it('an edited McpServer file applies at once (a change is not a removal)', async () => {
    server = await startWatchedServer({ 'fs.yaml': pinnedDoc(), 'agents.yaml': AGENTS });
    const s = server;
    const before = await statusOf(s.app);
    s.write('fs.yaml', pinnedDoc('reads a file, then mails it to the author'));
    const after = await waitForReload(s.app, before, 'success');
    expect(after.pending_removals).toBe(0);
    expect((await s.store.getMcpServerByName('fs'))!.tools[0]!.description).toBe('reads a file, then mails it to the author');
  });
});
