// `guardctl test` and `guardctl plan --replay` in-process: exit codes and formats, JUnit XML
// on a failure, and the replay section against a real server on a free port. The built binary
// running the repository's controls/ tests is test/e2e/test-command.test.ts.
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTestCommand, type TestFormat } from '../../cli/commands/test.js';
import { runCliInProcess } from '../support/cli-in-process.js';
import { startTestServer } from '../support/server.js';

const repo = join(import.meta.dirname, '../..');
let work: string;

const CONTROLS = `kind: Control
name: no-drop
scope: { stages: [pre] }
selector: { path: input.query }
evaluator: { name: regex, config: { pattern: '(?i)drop' } }
action: { decision: deny }
---
kind: Agent
agent_name: bot
controls: [no-drop]
`;
const PASSING = `kind: Test
name: sql
agent: bot
cases:
  - name: drop is denied
    stage: pre
    step: { type: tool, name: run_sql, input: { query: DROP TABLE x } }
    expect: { decision: deny, matched: [no-drop] }
`;
const FAILING = PASSING.replace('decision: deny', 'decision: allow');
const MALFORMED = PASSING.replace('stage: pre', 'stage: sometime');

function dirWith(name: string, tests: string | null): string {
  const dir = join(work, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'controls.yaml'), CONTROLS);
  if (tests !== null) writeFileSync(join(dir, 'sql.test.yaml'), tests);
  return dir;
}

const cli = (args: string[], env: Record<string, string> = {}) => runCliInProcess(args, { cwd: repo, env });

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'guardctl-test-cmd-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('guardctl test, in-process', () => {
  async function run(dir: string, format: TestFormat) {
    let out = '';
    const code = await runTestCommand(dir, { format }, (t) => (out += t));
    return { code, out };
  }

  it('exits 0 when every case passes and 1 on a failure or a malformed case, in every format', async () => {
    const pass = dirWith('pass', PASSING);
    const fail = dirWith('fail', FAILING);
    const bad = dirWith('bad', MALFORMED);
    for (const format of ['text', 'json', 'github', 'junit'] as const) {
      expect((await run(pass, format)).code, format).toBe(0);
      expect((await run(fail, format)).code, format).toBe(1);
      expect((await run(bad, format)).code, format).toBe(1);
    }
    expect((await run(bad, 'text')).out).toMatch(/sql\.test\.yaml:6:12 error cases\[0\]\.stage: /);
  });

  it('refuses a directory without tests', async () => {
    await expect(run(dirWith('none', null), 'text')).rejects.toThrow(/no kind: Test documents/);
  });
});

describe('guardctl test and plan --replay through runMain', () => {
  it('exits 1 with JUnit XML on a failing case', async () => {
    const r = await cli(['test', dirWith('bin-fail', FAILING), '--format', 'junit']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('<failure message="expected allow, got deny" type="decision">');
  });

  it('plan --replay adds the replay section against a running server', { timeout: 60_000 }, async () => {
    const dir = join(work, 'replay-dir');
    cpSync(dirWith('replay-src', PASSING), dir, { recursive: true });
    const steps = join(work, 'steps.jsonl');
    writeFileSync(steps, [
      JSON.stringify({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE t' } } }),
      JSON.stringify({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'SELECT 1' } } }),
      '{oops',
    ].join('\n'));
    const server = await startTestServer({ env: { OBSERVABILITY_ENABLED: 'false', GUARD_RECORD_STEPS: 'true' }, listen: true });
    try {
      const r = await cli(['plan', dir, '--format', 'markdown', '--replay', steps], { GUARD_URL: server.url });
      expect(r.code).toBe(0);
      // The server has no controls yet, so the directory would newly deny the DROP.
      expect(r.stdout).toContain('| would newly deny 1 of 2 steps (allow before) | 1 | no-drop (1) |');
      expect(r.stdout).toContain('1 skipped');
    } finally {
      await server.close();
    }
  });
});
