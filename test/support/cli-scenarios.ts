/**
 * What a command test does the same way whether it runs the built binary (test/e2e/run-cli.ts)
 * or the binary's own code in-process (test/support/cli-in-process.ts): the fixtures and
 * the steps both kinds share, written once and given the runner.
 */
import { expect } from 'vitest';
import type { CliRun } from '../e2e/run-cli.js';

export type RunCommand = (args: string[], env?: Record<string, string>) => Promise<CliRun>;

/** Checks that a command stopped with exit 1 and one `error: ` line, no stack; returns the line. */
export function oneLineError(run: CliRun): string {
  const lines = run.stderr.trimEnd().split('\n');
  expect(run.code, run.stderr).toBe(1);
  expect(lines, run.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^error: /);
  expect(run.stderr).not.toMatch(/\n\s+at |internal error/);
  return lines[0]!;
}

/** A deny control, two labelled agents, a policy choosing one by label, and a test by labels. */
export const POLICIES_YAML = `kind: Control
name: no-drop
scope: { step_types: [tool], stages: [pre] }
selector: { path: input.query }
evaluator: { name: regex, config: { pattern: '(?i)drop table' } }
action: { decision: deny }
---
kind: Agent
agent_name: pay-1
labels: { pci: "true" }
---
kind: Agent
agent_name: chat
labels: { pci: "false" }
---
kind: Policy
name: pci-baseline
controls: [no-drop]
agents: { match_labels: { pci: "true" } }
---
kind: Test
name: pci by labels
agent_labels: { pci: "true" }
cases:
  - name: drop is denied
    stage: pre
    step: { type: tool, name: run_sql, input: { query: DROP TABLE t } }
    expect: { decision: deny, matched: [no-drop] }
`;

/** A control denying social security numbers in model output, in `mode` (a bad value too, for the diagnostic). */
export function shadowControlYaml(mode: string): string {
  return `kind: Control
name: block-ssn-in-output
mode: ${mode}
scope:
  step_types: [llm]
  stages: [post]
selector:
  path: output
evaluator:
  name: regex
  config:
    pattern: '\\b\\d{3}-\\d{2}-\\d{4}\\b'
action:
  decision: deny
---
kind: Agent
agent_name: support-bot
controls: [block-ssn-in-output]
`;
}

/**
 * The first steps of the GitOps loop on the example controls (test/fixtures/example-controls
 * in ./controls): validate offline and against the server, plan (changes), apply, plan again
 * (no changes).
 */
export async function validatePlanApply(cli: RunCommand, serverUrl: string): Promise<void> {
  const at = { GUARD_URL: serverUrl };
  const valid = await cli(['validate', 'controls']);
  expect(valid.code).toBe(0);
  expect(valid.stdout).toContain('valid');

  const online = await cli(['validate', 'controls', '--server', serverUrl, '--format', 'json']);
  expect(online.code).toBe(0);
  expect(JSON.parse(online.stdout)).toMatchObject({ valid: true, server: serverUrl });

  const first = await cli(['plan', 'controls', '--detailed-exitcode'], at);
  expect(first.code).toBe(2);
  expect(first.stdout).toContain('+ create control "block-destructive-sql"');
  expect(first.stdout).toContain('+ link agent "support-bot" -> control "deny-secrets-in-output"');

  const applied = await cli(['apply', 'controls'], at);
  expect(applied.code).toBe(0);
  expect(applied.stdout).toMatch(/applied \d+ operation/);
  expect(applied.stderr).toMatch(/^\[1\/\d+\] \+ create control/m);

  const again = await cli(['plan', 'controls', '--detailed-exitcode'], at);
  expect(again.code).toBe(0);
  expect(again.stdout).toContain('No changes');
}
