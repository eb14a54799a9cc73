// A second directory that names an agent a watched directory keeps: plan reports every
// write apply would have refused (409 read_only), so apply refuses before writing anything.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GuardClient } from '../../src/client/index.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDocuments } from '../../src/gitops/load.js';
import { refusalOf } from '../../src/gitops/refusal.js';
import { planAgainstServer } from '../../src/gitops/sync.js';
import { loadConfig } from '../../src/server/config.js';
import { startServer, type ServerHandle } from '../../src/server/start.js';

const watchedNames = Array.from({ length: 8 }, (_, i) => `w-${i}`);
const control = (name: string, pattern = name) => `kind: Control
name: ${name}
selector: { path: input }
evaluator: { name: regex, config: { pattern: '${pattern}' } }
action: { decision: deny }
`;

let root: string;
let server: ServerHandle;
let client: GuardClient;

beforeEach(async () => {
  root = mkdtempSync(join(tmpdir(), 'guardctl-watch-conflicts-'));
  const dir = join(root, 'watched');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(dir);
  writeFileSync(join(dir, 'all.yaml'), [...watchedNames.map((n) => control(n)), `kind: Agent\nagent_name: bot\ncontrols: [${watchedNames.join(', ')}]\n`].join('---\n'));
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', OBSERVABILITY_ENABLED: 'false' }, { watchDir: dir, databaseUrl: join(root, 'guard.db') });
  server = await startServer(config, { handleSignals: false, logger: false, print: () => {}, env: {} });
  client = new GuardClient({ serverUrl: server.url, timeoutMs: 20_000 });
});
afterEach(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

const load = (text: string) => loadDocuments([{ path: 'other/c.yaml', text }], { validateControl: controlValidator(createDefaultRegistry()) });

describe('plan against controls a watched directory keeps', () => {
  it('reports every unlink of a watched control as a conflict and plans none of them', async () => {
    expect((await client.getAgent('bot')).controls?.map((c) => c.name)).toEqual(watchedNames);
    const other = load(`${control('mine')}---\nkind: Agent\nagent_name: bot\ncontrols: [mine]\n`);
    for (const force of [false, true]) {
      const { plan } = await planAgainstServer(client, other, { prune: true, force });
      expect(plan.conflicts.map((c) => [c.name, c.managed_by, c.agent_name, c.op])).toEqual(
        watchedNames.map((n) => [n, expect.stringMatching(/^watch:/), 'bot', 'unlink']),
      );
      expect(plan.operations.filter((o) => o.op === 'unlink')).toEqual([]);
      const refusal = refusalOf(plan, { directory: 'other', owner: 'default' });
      expect(refusal?.message).toMatch(/8 links? .*watched/);
      expect(refusal?.groups.every((g) => g.command === null)).toBe(true);
    }
  });

  it('a same-named watched control that differs is a conflict --force does not take, and a link to one is a conflict', async () => {
    const same = load(`${control('w-0')}---\n${control('w-1', 'other')}---\nkind: Agent\nagent_name: helper\ncontrols: [w-0]\n`);
    for (const force of [false, true]) {
      const { plan } = await planAgainstServer(client, same, { force });
      expect(plan.conflicts.map((c) => [c.name, c.op ?? 'control'])).toEqual([['w-1', 'control'], ['w-0', 'link']]);
      expect(plan.operations.map((o) => o.op)).toEqual(['create_agent']);
    }
  });
});
