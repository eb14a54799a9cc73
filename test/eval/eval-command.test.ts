// guardctl eval in-process: the line formats, the report formats, gates, diagnostics, masking.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { runEvalCommand, parseRatio, type EvalCommandOptions } from '../../cli/commands/eval.js';
import { base62, crc32 } from '../../src/evaluators/secrets/checks.js';

const CONTROLS = `
kind: Control
name: no-secrets
selector: {path: input}
evaluator: {name: secrets}
action: {decision: deny}
---
kind: Control
name: no-drop
selector: {path: input.query}
scope: {step_types: [tool]}
evaluator: {name: regex, config: {pattern: "(?i)drop\\\\s+table"}}
action: {decision: deny}
---
kind: Agent
agent_name: bot
controls: [no-drop]
`;

// A documented-format key that is not a documented example: it must never be echoed whole.
const KEY = 'AKIAQWERTYUIOPASDFGH';
// A GitHub token shape with its CRC-32 (a token failing it is not reported).
const GH_BODY = 'aB3xK9qZmP4wL7rT2vN8yC5hJ1dF6g';
const GH = `ghp_${GH_BODY}${base62(crc32(GH_BODY), 6)}`;

function workspace(lines: readonly string[]): { dir: string; dataset: string } {
  const root = mkdtempSync(join(tmpdir(), 'guard-eval-'));
  const dir = join(root, 'controls');
  mkdirSync(dir);
  writeFileSync(join(dir, 'controls.yaml'), CONTROLS);
  const dataset = join(root, 'cases.jsonl');
  writeFileSync(dataset, `${lines.join('\n')}\n`);
  return { dir, dataset };
}

async function run(lines: readonly string[], options: Partial<EvalCommandOptions> = {}) {
  const { dir, dataset } = workspace(lines);
  let out = '';
  const code = await runEvalCommand(dataset, dir, { format: 'json', ...options }, (t) => (out += t));
  return { code, out, report: options.format === undefined || options.format === 'json' ? JSON.parse(out) : null };
}

const step = (id: string, input: unknown, expect: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id, stage: 'pre', step: { type: 'llm', name: 'chat', input }, expect, ...extra });

describe('guardctl eval', () => {
  test('per control: confusion counts, precision, recall, F1 and times', async () => {
    const { code, report } = await run([
      step('tp', `key ${KEY}`, { triggers: { 'no-secrets': true } }),
      step('tn', 'hello', { matched: [] }),
      step('fn', 'password is hunter2', { triggers: { 'no-secrets': true } }),
      JSON.stringify({ id: 'fp', data: `see ${GH}`, expected_triggers: { 'no-secrets': false } }),
    ]);
    expect(code).toBe(0);
    const row = report.controls.find((c: { name: string }) => c.name === 'no-secrets');
    expect(row).toMatchObject({ cases: 4, tp: 1, tn: 1, fn: 1, fp: 1, precision: 0.5, recall: 0.5, f1: 0.5 });
    expect(row.p50_ms).toBeGreaterThan(0);
    expect(row.p95_ms).toBeGreaterThanOrEqual(row.p50_ms);
    expect(row.misses.map((m: { id: string }) => m.id)).toEqual(['fn']);
    expect(row.false_positives).toEqual([{ id: 'fp', line: 4, detail: expect.stringContaining(`ghp_…${GH.slice(-4)}`) }]);
  });

  test('never echoes a matched value: misses and false positives are listed masked', async () => {
    const lines = [
      step('miss', `${KEY} and ${GH}`, { triggers: { 'no-secrets': false } }),
      JSON.stringify({ id: 'fn', data: `creds ${KEY}`, expected_triggers: { 'no-drop': true } }),
    ];
    for (const format of ['json', 'text', 'markdown'] as const) {
      const { out } = await run(lines, { format });
      expect(out).not.toContain(KEY);
      expect(out).not.toContain(GH);
      expect(out).toContain('AKIA…');
    }
  });

  test('Guardrails data lines: the text reaches each control whatever its selector and scope', async () => {
    const { report } = await run([
      JSON.stringify({ id: 'g1', data: 'please DROP  TABLE users', expected_triggers: { 'no-drop': true } }),
      JSON.stringify({ id: 'g2', data: 'select 1', expected_triggers: { 'no-drop': false } }),
    ]);
    expect(report.controls[0]).toMatchObject({ name: 'no-drop', tp: 1, tn: 1, fp: 0, fn: 0 });
  });

  test('an agent evaluates only its controls; expect.decision scores the decision row', async () => {
    const tool = (id: string, query: string, decision: string) =>
      JSON.stringify({ id, agent: 'BOT', stage: 'pre', step: { type: 'tool', name: 'sql', input: { query } }, expect: { decision } });
    const { report } = await run([tool('d1', 'drop table t', 'deny'), tool('d2', 'select 1', 'allow'), tool('d3', 'select 2', 'deny')]);
    const decision = report.controls.find((c: { kind: string }) => c.kind === 'decision');
    expect(decision).toMatchObject({ tp: 1, tn: 1, fn: 1, fp: 0, recall: 0.5 });
    expect(decision.misses[0]).toMatchObject({ id: 'd3', detail: 'expected deny, got allow' });
    expect(report.controls.find((c: { name: string }) => c.name === 'no-secrets')).toBeUndefined();
  });

  test('bad lines: a diagnostic each with its line number, the rest still evaluated, exit 1', async () => {
    const { code, report } = await run([
      step('ok', 'hello', { triggers: { 'no-secrets': false } }),
      `{"id": "broken", ${KEY}`,
      JSON.stringify({ stage: 'pre', step: { type: 'llm', name: 'x', input: 'a' }, expect: { decision: 'allow' } }),
      JSON.stringify({ id: 'no-expect', stage: 'pre', step: { type: 'llm', name: 'x', input: 'a' } }),
      step('typo', 'hello', { triggers: { 'no-secret': true } }),
      step('agent', 'hello', { decision: 'allow' }, { agent: 'nobody' }),
      step('stage', 'hello', { decision: 'allow' }, { stage: 'during' }),
      '',
      step('ok2', `key ${KEY}`, { triggers: { 'no-secrets': true } }),
    ]);
    expect(code).toBe(1);
    expect(report.cases).toBe(2);
    expect(report.passed).toBe(false);
    expect(report.diagnostics.map((d: { line: number; message: string }) => [d.line, d.message])).toEqual([
      [2, expect.stringMatching(/^not JSON/)],
      [3, 'missing id'],
      [4, 'missing expect'],
      [5, 'unknown control "no-secret"'],
      [6, 'unknown agent "nobody"'],
      [7, expect.stringContaining('stage')],
    ]);
    // The diagnostic of a line that is not JSON does not quote it.
    expect(JSON.stringify(report.diagnostics)).not.toContain(KEY);
  });

  test('gates: exit 1 below --min-precision or --min-recall, naming the control', async () => {
    const lines = [
      step('tp', `key ${KEY}`, { triggers: { 'no-secrets': true } }),
      step('fn', 'password is hunter2', { triggers: { 'no-secrets': true } }),
    ];
    expect((await run(lines, { minPrecision: '0.9' })).code).toBe(0);
    const failed = await run(lines, { minPrecision: '0.9', minRecall: '0.9' });
    expect(failed.code).toBe(1);
    expect(failed.report.gates.failures).toEqual([{ name: 'no-secrets', metric: 'recall', value: 0.5, min: 0.9 }]);
    const text = await run(lines, { minRecall: '0.9', format: 'text' });
    expect(text.out).toContain('✗ no-secrets: recall 0.500 is below 0.9');
    expect(() => parseRatio('--min-recall', '1.5')).toThrow(/not a ratio from 0 to 1/);
    expect(() => parseRatio('--min-recall', 'abc')).toThrow(/not a ratio/);
  });

  test('markdown is a table for a pull-request comment', async () => {
    const { out } = await run([step('tp', `key ${KEY}`, { triggers: { 'no-secrets': true } })], { format: 'markdown' });
    expect(out).toMatch(/^### guardctl eval: /);
    expect(out).toContain('| control | cases | TP | FP | TN | FN | errors | precision | recall | F1 | p50 | p95 |');
    expect(out).toContain('| no-secrets | 1 | 1 | 0 | 0 | 0 | 0 | 1.000 | 1.000 | 1.000 |');
  });

  test('a dataset that is not there is a user error', async () => {
    const { dir } = workspace([]);
    await expect(runEvalCommand(join(dir, 'nope.jsonl'), dir, { format: 'json' }, () => {})).rejects.toThrow(/cannot read the dataset/);
  });
});
