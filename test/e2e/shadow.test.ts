// The built binary: apply in shadow, shadow-report, history and a bad mode's diagnostic. The
// whole shadow-first rollout (figures in plan, promotion, history in every format) is tested
// in-process: test/cli/shadow-rollout.test.ts.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { requireBuiltBinary, startServeProcess, type ServeProcess } from './serve-process.js';
import { shadowControlYaml } from '../support/cli-scenarios.js';

const ADMIN = 'e2e-admin-key-000001';

let work: string;
let server: ServeProcess;
const cli = (args: string[]) => runCli(args, { cwd: work, env: { GUARD_URL: server.url, GUARD_API_KEY: ADMIN } });

/** The control in `mode` (a bad value too, for the diagnostic). */
function writeControls(mode: string): void {
  writeFileSync(
    join(work, 'controls', 'pii.yaml'),
    shadowControlYaml(mode),
  );
}

beforeAll(async () => {
  requireBuiltBinary();
  work = mkdtempSync(join(tmpdir(), 'guardctl-e2e-shadow-'));
  mkdirSync(join(work, 'controls'));
  server = await startServeProcess({
    args: ['--db', join(work, 'guard.db')],
    cwd: work,
    env: { OBSERVABILITY_FLUSH_INTERVAL_SECONDS: '0.05', GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: ADMIN },
  });
});

afterAll(async () => {
  await server?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('shadow-first rollout with the built binary', () => {
  it('apply in shadow, shadow-report and history through the binary', { timeout: 120_000 }, async () => {
    writeControls('shadow');
    const applied = await cli(['apply', 'controls']);
    expect(applied.code, applied.stderr).toBe(0);
    const report = await cli(['shadow-report', '--since', '1h']);
    expect(report.code, report.stderr).toBe(0);
    expect(report.stdout).toContain('block-ssn-in-output');
    const history = await cli(['history', 'block-ssn-in-output']);
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toMatch(/^History of control "block-ssn-in-output" \(id \d+\) on http/);
    expect(history.stdout).toContain('  + create (deny, regex on output)');
  });

  it('refuses a mode other than enforce and shadow with a file:line:col diagnostic', { timeout: 60_000 }, async () => {
    writeControls('audit');
    const result = await cli(['validate', 'controls']);
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).toMatch(/pii\.yaml:3:7 .*mode.*mode must be "enforce" or "shadow"/s);
  });
});
