// The built binary: guardctl eval on the shipped datasets, its exit codes and a bad line.
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { runCli } from './run-cli.js';

const ROOT = join(import.meta.dirname, '..', '..');

test('guardctl eval: a table on the shipped dataset, a gate that fails, a bad line', async () => {
  const ok = await runCli(['eval', 'eval/prompt-injection.jsonl', 'eval/controls'], { cwd: ROOT, env: { NO_COLOR: '1' } });
  expect(ok.code).toBe(0);
  expect(ok.stdout).toMatch(/^eval\/prompt-injection\.jsonl \(in-process\): 60 cases evaluated/);
  expect(ok.stdout).toMatch(/prompt-injection\s+60\s+\d+\s+0\s+/);

  const gated = await runCli(['eval', 'eval/prompt-injection.jsonl', 'eval/controls', '--min-recall', '0.99', '--format', 'json'], { cwd: ROOT });
  expect(gated.code).toBe(1);
  expect(JSON.parse(gated.stdout).gates.failures[0]).toMatchObject({ name: 'prompt-injection', metric: 'recall', min: 0.99 });

  const dir = mkdtempSync(join(tmpdir(), 'guard-eval-e2e-'));
  copyFileSync(join(ROOT, 'eval', 'prompt-injection.jsonl'), join(dir, 'cases.jsonl'));
  writeFileSync(join(dir, 'cases.jsonl'), '{"id": 1, "data": "x", "expected_triggers": {"nope": true}}\n', { flag: 'a' });
  const bad = await runCli(['eval', join(dir, 'cases.jsonl'), join(ROOT, 'eval', 'controls'), '--format', 'json'], { cwd: ROOT });
  expect(bad.code).toBe(1);
  const report = JSON.parse(bad.stdout);
  expect(report.cases).toBe(60);
  expect(report.diagnostics).toEqual([expect.objectContaining({ line: 61, id: '1', message: 'unknown control "nope"' })]);
}, 60_000);
