// The built binary against a real server on a free port: each GitOps command starts, parses,
// talks to the server and exits with its code. What the commands do (the whole loop of
// edits, diffs, exports and prunes; saved plans, conflicts, broken directories, a server
// down or refusing the key) is tested in-process: test/cli/gitops-loop.test.ts and
// test/cli/gitops-commands.test.ts.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { requireBuiltBinary, startServeProcess, type ServeProcess } from './serve-process.js';
import { validatePlanApply } from '../support/cli-scenarios.js';

const repo = join(import.meta.dirname, '../..');

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { cwd: work, env });

function startServer(env: Record<string, string>): Promise<ServeProcess> {
  return startServeProcess({ args: ['--db', join(work, `db-${Date.now()}.sqlite`)], cwd: work, env: { OBSERVABILITY_ENABLED: 'false', ...env } });
}

let work: string;
let server: ServeProcess;

beforeAll(async () => {
  requireBuiltBinary();
  work = mkdtempSync(join(tmpdir(), 'guardctl-e2e-'));
  cpSync(join(repo, 'test/fixtures/example-controls'), join(work, 'controls'), { recursive: true });
  server = await startServer({});
});

afterAll(async () => {
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

const at = () => ({ GUARD_URL: server.url });

describe('guardctl gitops, end to end', () => {
  it('validate, plan, apply, re-plan and export through the binary', { timeout: 120_000 }, async () => {
    await validatePlanApply(cli, server.url);

    const exported = await cli(['export', 'exported', '--format', 'json'], at());
    expect(exported.code).toBe(0);
    expect(JSON.parse(exported.stdout).controls).toBeGreaterThanOrEqual(7);
    expect((await cli(['export', 'exported'], at())).code).toBe(1);
  });
});
