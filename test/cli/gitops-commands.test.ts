/**
 * The GitOps commands (validate, plan, apply, export, schema) in-process against a real
 * server on a free port: saved plans the server has moved past, the owner trap, prunes a
 * policy blocks, broken directories, a server that is down or refuses the key. The same
 * loop through the built binary is test/e2e/gitops.test.ts.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli-in-process.js';
import { startTestServer, type TestServer } from '../support/server.js';

const repo = join(import.meta.dirname, '../..');

const cli = (args: string[], env: Record<string, string> = {}) => runCliInProcess(args, { cwd: work, env });

function startServer(env: Record<string, string> = {}): Promise<TestServer> {
  return startTestServer({ env: { OBSERVABILITY_ENABLED: 'false', ...env }, listen: true });
}

/** A port nothing listens on: bound once to get a free number, then closed. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

let work: string;
let server: TestServer;
let controls: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'guardctl-gitops-'));
  controls = join(work, 'controls');
  cpSync(join(repo, 'test/fixtures/example-controls'), controls, { recursive: true });
  server = await startServer();
  const applied = await cli(['apply', 'controls'], at());
  expect(applied.code, applied.stderr).toBe(0);
});

afterAll(async () => {
  await server?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

const at = () => ({ GUARD_URL: server.url });

describe('guardctl gitops commands', () => {
  it('refuses a saved plan after the server changed', { timeout: 60_000 }, async () => {
    const file = join(controls, 'secrets.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('description: Block outputs', 'description: Stop outputs'));
    const saved = await cli(['plan', 'controls', '--out', 'plan.json'], at());
    expect(saved.code).toBe(0);
    const list = (await (await fetch(`${server.url}/api/v1/controls?limit=100`)).json()) as { controls: Array<{ control_id: number; name: string }> };
    const id = list.controls.find((c) => c.name === 'block-destructive-sql')!.control_id;
    await fetch(`${server.url}/api/v1/controls/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"enabled":false}' });
    const refused = await cli(['apply', 'plan.json'], at());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the server changed since the plan');

    expect((await cli(['plan', 'controls', '--out', 'plan.json'], at())).code).toBe(0);
    const ok = await cli(['apply', 'plan.json'], at());
    expect(ok.code).toBe(0);
    expect((await cli(['plan', 'controls', '--detailed-exitcode'], at())).code).toBe(0);
  });

  it("refuses a saved plan after a control's data (not only enabled) changed by PUT: the fingerprint covers the data", { timeout: 60_000 }, async () => {
    const file = join(controls, 'secrets.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace('description: Stop outputs', 'description: Halt outputs'));
    expect((await cli(['plan', 'controls', '--out', 'plan.json'], at())).code).toBe(0);
    const list = (await (await fetch(`${server.url}/api/v1/controls?limit=100`)).json()) as {
      controls: Array<{ control_id: number; name: string; enabled: boolean }>;
    };
    const target = list.controls.find((c) => c.name === 'block-destructive-sql')!;
    const { data } = (await (await fetch(`${server.url}/api/v1/controls/${target.control_id}/data`)).json()) as {
      data: { evaluator: { config: { blocked_operations: string[] } } };
    };
    // Only the evaluator config changes: enabled, name, owner and links stay as they were.
    data.evaluator.config.blocked_operations = [...data.evaluator.config.blocked_operations, 'create'];
    const put = await fetch(`${server.url}/api/v1/controls/${target.control_id}/data`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data }),
    });
    expect(put.status).toBe(200);
    const after = (await (await fetch(`${server.url}/api/v1/controls?limit=100`)).json()) as typeof list;
    expect(after.controls.find((c) => c.name === 'block-destructive-sql')!.enabled).toBe(target.enabled);

    const refused = await cli(['apply', 'plan.json'], at());
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('the server changed since the plan');

    // A new plan puts the file's pattern back.
    expect((await cli(['plan', 'controls', '--out', 'plan.json'], at())).code).toBe(0);
    expect((await cli(['apply', 'plan.json'], at())).code).toBe(0);
    expect((await cli(['plan', 'controls', '--detailed-exitcode'], at())).code).toBe(0);
  });

  it('the owner trap: a plan apply would refuse exits 1 and says why in every format; its command adopts the controls', { timeout: 120_000 }, async () => {
    const own = await startServer();
    const trap = join(work, 'trap');
    cpSync(join(repo, 'test/fixtures/example-controls'), trap, { recursive: true });
    const env = { GUARD_URL: own.url };
    try {
      // The first, local apply runs without --owner ("default"); then a file changes and CI plans as the repository.
      expect((await cli(['apply', 'trap'], env)).code).toBe(0);
      const file = join(trap, 'deployments.yaml');
      writeFileSync(file, readFileSync(file, 'utf8').replace('decision: warn', 'decision: deny'));
      const ci = ['--owner', 'acme/guards'];
      const adopt = 'guardctl apply trap --server ' + own.url + ' --owner acme/guards --adopt default';

      const text = await cli(['plan', 'trap', ...ci, '--detailed-exitcode'], env);
      expect(text.code).toBe(1);
      expect(text.stdout).toContain('! conflict: control "warn-shell-rm-rf" exists on the server, owned by gitops:default');
      expect(text.stdout).toContain('Apply would refuse this plan: 1 control of the same name exists on the server under another owner than gitops:acme/guards.');
      expect(text.stdout).toContain('applied without --owner (owner "default"), for example by a first local guardctl apply; this plan runs with --owner acme/guards, as a CI workflow does with --owner $GITHUB_REPOSITORY');
      expect(text.stdout).toContain(`    ${adopt}\n`);
      expect(text.stderr).toMatch(/^error: apply would refuse this plan: 1 conflict/);

      const json = await cli(['plan', 'trap', ...ci, '--format', 'json'], env);
      expect(json.code).toBe(1);
      const refusal = (JSON.parse(json.stdout) as { refusal: { groups: Array<{ command: string; names: string[] }> } }).refusal;
      expect(refusal.groups).toEqual([expect.objectContaining({ managed_by: 'gitops:default', names: ['warn-shell-rm-rf'], command: adopt })]);

      const markdown = await cli(['plan', 'trap', ...ci, '--format', 'markdown'], env);
      expect(markdown.code).toBe(1);
      expect(markdown.stdout).toContain('> **Apply would refuse this plan**: 1 control of the same name exists');
      expect(markdown.stdout).toContain(`> \`\`\`sh\n> ${adopt}\n> \`\`\``);

      // Saved, such a plan would apply without the conflicting control: it is not saved.
      const saved = await cli(['plan', 'trap', ...ci, '--out', 'trap-plan.json'], env);
      expect(saved.code).toBe(1);
      expect(saved.stderr).toContain('nothing was saved to trap-plan.json');
      expect(existsSync(join(work, 'trap-plan.json'))).toBe(false);

      const before = await (await fetch(`${own.url}/api/v1/controls?limit=100`)).text();
      const refused = await cli(['apply', 'trap', ...ci], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('error: apply refused: 1 control of the same name exists on the server under another owner than gitops:acme/guards; nothing was changed');
      expect(refused.stderr).toContain(adopt);
      expect(await (await fetch(`${own.url}/api/v1/controls?limit=100`)).text()).toBe(before);

      // The command as printed, word for word.
      const adopted = await cli(adopt.split(' ').slice(1), {});
      expect(adopted.code).toBe(0);
      const settled = await cli(['plan', 'trap', ...ci, '--prune', '--detailed-exitcode'], env);
      expect(settled.stdout).toContain('No changes');
      expect(settled.code).toBe(0);
      const list = (await (await fetch(`${own.url}/api/v1/controls?limit=100`)).json()) as { controls: Array<{ managed_by: string }> };
      expect(new Set(list.controls.map((c) => c.managed_by))).toEqual(new Set(['gitops:acme/guards']));
    } finally {
      await own.close();
    }
  });

  it('a prune that would delete a control a hand-made policy binds: plan exits 1 naming the policy, apply changes nothing', { timeout: 120_000 }, async () => {
    const own = await startServer();
    const dir = join(work, 'bound');
    const control = (name: string) => `kind: Control\nname: ${name}\nselector: { path: input }\nevaluator: { name: regex, config: { pattern: 'never-${name}' } }\naction: { decision: deny }\n`;
    mkdirSync(dir);
    writeFileSync(join(dir, 'a.yaml'), control('bound-one'));
    writeFileSync(join(dir, 'b.yaml'), control('free-one'));
    const env = { GUARD_URL: own.url };
    try {
      expect((await cli(['apply', 'bound'], env)).code).toBe(0);
      const made = await fetch(`${own.url}/api/v1/policies`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'by-hand', controls: ['bound-one'], agents: { match_labels: {} } }),
      });
      expect(made.status).toBe(201);
      unlinkSync(join(dir, 'a.yaml'));

      const text = await cli(['plan', 'bound', '--prune'], env);
      expect(text.code).toBe(1);
      expect(text.stdout).toContain('! conflict: delete control "bound-one": bound by policy "by-hand", which the plan keeps; the server refuses the delete');
      expect(text.stdout).toContain('1 control it would delete is bound by a policy it keeps, and the server refuses to delete a control a policy binds');
      expect(text.stdout).toContain('take "bound-one" out of the controls of that policy (or delete it) first, or keep the control in the directory');
      expect(text.stderr).toMatch(/^error: apply would refuse this plan: 1 conflict .*what to do instead/);

      const refused = await cli(['apply', 'bound', '--prune'], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('nothing was changed');
      const left = (await (await fetch(`${own.url}/api/v1/controls?name=bound-one`)).json()) as { controls: unknown[] };
      expect(left.controls).toHaveLength(1);
    } finally {
      await own.close();
    }
  });

  it('plan says a pin of an earlier guardctl leaves fields unchecked, and how to re-pin; the re-pin shows what it adds', { timeout: 60_000 }, async () => {
    const { mcpToolFingerprint } = await import('../../src/gitops/canonical.js');
    const dir = join(work, 'old-pin');
    mkdirSync(dir, { recursive: true });
    const input_schema = { type: 'object' };
    const pin = (fingerprint: string, more = '') =>
      `kind: McpServer\nname: old-fs\ntransport: { command: [fs-server] }\n${more}tools:\n  - name: read\n    description: reads\n    input_schema: { type: object }\n    fingerprint: ${fingerprint}\n`;
    writeFileSync(join(dir, 'fs.yaml'), pin(mcpToolFingerprint({ description: 'reads', input_schema }, 1)));
    const planned = await cli(['plan', 'old-pin', '--owner', 'test:old-pin'], at());
    expect(planned.code, planned.stderr).toBe(0);
    expect(planned.stderr).toContain('McpServer "old-fs" does not pin the titles and output schemas of 1 tool');
    expect(planned.stderr).toContain('guardctl mcp-pin --name old-fs --out old-pin/fs.yaml -- fs-server');
    expect((await cli(['apply', 'old-pin', '--auto-approve', '--owner', 'test:old-pin'], at())).code).toBe(0);
    writeFileSync(join(dir, 'fs.yaml'), pin(mcpToolFingerprint({ description: 'reads', input_schema }), 'instructions: null\n'));
    const repinned = await cli(['plan', 'old-pin', '--owner', 'test:old-pin'], at());
    expect(repinned.stderr).not.toContain('pin_outdated');
    expect(repinned.stdout).toContain('instructions: not pinned -> none');
    expect(repinned.stdout).toContain('fingerprint: "sha256: covers description, input_schema, annotations" -> "sha256-v2: covers title, description, input_schema, output_schema, annotations"');
  });

  it('rejects a broken directory with diagnostics and sends nothing to the server', async () => {
    const before = await (await fetch(`${server.url}/api/v1/controls?limit=100`)).text();
    const broken = join(repo, 'test/fixtures/invalid/dangling-link');
    const validate = await cli(['validate', broken, '--format', 'github']);
    expect(validate.code).toBe(1);
    expect(validate.stdout).toMatch(/^::error file=.*controls\.yaml,line=11,col=5,/m);
    const applied = await cli(['apply', broken], at());
    expect(applied.code).toBe(1);
    expect(applied.stderr).toContain('nothing was sent to the server');
    expect(await (await fetch(`${server.url}/api/v1/controls?limit=100`)).text()).toBe(before);
  });

  it('says in one line what to do when the server is down or refuses the key', { timeout: 60_000 }, async () => {
    const port = await closedPort();
    const down = await cli(['plan', 'controls', '--server', `http://127.0.0.1:${port}`, '--timeout', '5s']);
    expect(down.code).toBe(1);
    expect(down.stderr.trim().split('\n')).toHaveLength(1);
    expect(down.stderr).toMatch(new RegExp(`^error: cannot reach the server at http://127\\.0\\.0\\.1:${port} \\(.*ECONNREFUSED.*guardctl serve`));

    const secured = await startServer({ GUARD_API_KEY_ENABLED: 'true', GUARD_API_KEYS: 'regular-key-0000001', GUARD_ADMIN_API_KEYS: 'admin-key-000000001' });
    try {
      const noKey = await cli(['plan', 'controls', '--server', secured.url]);
      expect(noKey.code).toBe(1);
      expect(noKey.stderr.trim().split('\n')).toHaveLength(1);
      expect(noKey.stderr).toContain('401');
      const reader = await cli(['apply', 'controls', '--server', secured.url, '--api-key', 'regular-key-0000001']);
      expect(reader.code).toBe(1);
      expect(reader.stderr).toContain('403');
      expect((await cli(['apply', 'controls', '--server', secured.url], { GUARD_API_KEY: 'admin-key-000000001' })).code).toBe(0);
    } finally {
      await secured.close();
    }
  });

  it('prints the JSON Schema', async () => {
    const out = await cli(['schema']);
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(readFileSync(join(repo, 'schema/guardctl.schema.json'), 'utf8'));
  });
});
