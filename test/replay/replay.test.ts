import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import type { ControlData } from '../../src/model/index.js';
import { compileReplaySides, describeChange, parseJsonLines, readJsonLinesFile, replay, type RawRecord } from '../../src/replay/index.js';
import { compileAgentSets } from '../../src/testing/index.js';

const registry = createDefaultRegistry();
const regex = (pattern: string, decision: ControlData['action']['decision'], path = 'input.query'): ControlData => ({
  enabled: true,
  execution: 'server',
  scope: { stages: ['pre'] },
  selector: { path },
  evaluator: { name: 'regex', config: { pattern } },
  action: decision === 'steer' ? { decision, steering_context: { message: 'm' } } : { decision },
});

// Before: only DROP is denied. After: DELETE is denied too, and DROP only steered.
const before = compileAgentSets([{ name: 'no-drop', data: regex('(?i)drop', 'deny') }], [{ agent_name: 'bot', controls: ['no-drop'] }], registry);
const after = compileAgentSets(
  [
    { name: 'steer-drop', data: regex('(?i)drop', 'steer') },
    { name: 'no-delete', data: regex('(?i)delete', 'deny') },
  ],
  [{ agent_name: 'bot', controls: ['steer-drop', 'no-delete'] }],
  registry,
);

const rec = (label: string, query: string, agent = 'bot'): RawRecord => ({
  label,
  value: { agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query } } },
});

describe('replay', () => {
  it('counts decision changes per kind with the responsible controls and examples', async () => {
    const records = [
      rec('r1', 'SELECT 1'),
      rec('r2', 'DELETE FROM a'),
      rec('r3', 'delete from b'),
      rec('r4', 'DROP TABLE c'),
      rec('r5', 'SELECT 2'),
      rec('r6', 'DELETE FROM d'),
    ];
    const report = await replay(records, before, after, { examples: 2, source: 'test' });
    expect(report).toMatchObject({ total: 6, evaluated: 6, skipped: 0, unchanged: { allow: 2, deny: 0, steer: 0 }, source: 'test' });
    expect(report.changes.map((c) => [c.from, c.to, c.count, c.controls])).toEqual([
      ['allow', 'deny', 3, { 'no-delete': 3 }],
      ['deny', 'steer', 1, { 'steer-drop': 1 }],
    ]);
    expect(report.changes[0]!.examples.map((e) => e.label)).toEqual(['r2', 'r3']);
    expect(report.changes[0]!.examples[0]).toMatchObject({ agent_name: 'bot', stage: 'pre', step_type: 'tool', step_name: 'run_sql', input_excerpt: '{"query":"[MATCHED]"}', controls: ['no-delete'] });
    expect(describeChange(report.changes[0]!, 10_000)).toBe('would newly deny 3 of 10,000 steps (allow before)');
  });

  it('never shows what a control matched in an example: the values the deciding controls read are masked', async () => {
    const card = regex('\\b4[0-9]{15}\\b', 'deny', 'input.note');
    const guarded = compileAgentSets([{ name: 'no-cards', data: card }], [{ agent_name: 'bot', controls: ['no-cards'] }], registry);
    const none = compileAgentSets([], [], registry);
    const step: RawRecord = {
      label: 'r1',
      value: { agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'pay', input: { customer: 'bob', note: 'card 4111111111111111 exp 12/30' } } },
    };
    // Newly denied (the after side matched) and newly allowed (the before side had matched).
    for (const [b, a] of [[none, guarded], [guarded, none]] as const) {
      const report = await replay([step], b, a);
      const example = report.changes[0]!.examples[0]!;
      expect(example.input_excerpt).toBe('{"customer":"bob","note":"[MATCHED]"}');
      expect(JSON.stringify(report)).not.toContain('4111111111111111');
    }
  });

  it('an example is redacted as recorded steps are, whatever its source (a JSON-lines file is not)', async () => {
    const step: RawRecord = {
      label: 'line 1',
      value: { agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DELETE FROM a', db_password: 'hunter2-hunter2' } } },
    };
    const report = await replay([step], before, after);
    expect(report.changes[0]!.examples[0]!.input_excerpt).not.toContain('hunter2');
  });

  it('a change to allow names the controls that decided before', async () => {
    const report = await replay([rec('r1', 'DROP x')], before, compileAgentSets([], [], registry));
    expect(report.changes).toEqual([
      expect.objectContaining({ from: 'deny', to: 'allow', count: 1, controls: { 'no-drop': 1 } }),
    ]);
  });

  it('counts and skips records that no longer fit the model, naming each, and never throws', async () => {
    const records: RawRecord[] = [
      rec('r1', 'DELETE x'),
      { label: 'r2', value: { agent_name: 'bot', stage: 'during', step: { type: 'tool', name: 'x', input: {} } } },
      { label: 'r3', value: { agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'x', input: {}, extra: 1 } } },
      { label: 'r4', value: 'not an object' },
      { label: 'r5', value: null },
    ];
    const report = await replay(records, before, after);
    expect(report).toMatchObject({ total: 5, evaluated: 1, skipped: 4 });
    expect(report.warnings).toHaveLength(4);
    expect(report.warnings[0]).toMatch(/^r2: skipped, .*stage/);
    expect(report.warnings[1]).toMatch(/^r3: skipped, .*step\.extra/);
  });

  it('steps of agents that neither side knows are evaluated against no controls', async () => {
    const report = await replay([rec('r1', 'DROP', 'stranger')], before, after);
    expect(report).toMatchObject({ evaluated: 1, unchanged: { allow: 1 }, changes: [] });
  });
});

describe('replay with shared controls evaluated once', () => {
  it('gives the same counts, controls and examples as evaluating both full sides', async () => {
    const shared = { name: 'no-truncate', data: regex('(?i)truncate', 'deny') };
    const was = { controls: [shared, { name: 'no-drop', data: regex('(?i)drop', 'deny') }, { name: 'steer-x', data: regex('xx', 'steer') }], agents: [{ agent_name: 'bot', controls: ['no-truncate', 'no-drop', 'steer-x'] }] };
    const now = {
      controls: [shared, { name: 'no-drop', data: regex('(?i)drop', 'steer') }, { name: 'no-delete', data: regex('(?i)delete', 'deny') }, { name: 'steer-x', data: regex('xx', 'steer') }],
      agents: [{ agent_name: 'bot', controls: ['no-truncate', 'no-drop', 'no-delete', 'steer-x'] }, { agent_name: 'new', controls: ['no-delete'] }],
    };
    const records = ['SELECT', 'DROP a', 'truncate b', 'DELETE c', 'xx DROP', 'xx', 'TRUNCATE DROP'].map((q, i) => rec(`r${i}`, q));
    records.push(rec('r9', 'DELETE', 'new'));
    const full = await replay(records, compileAgentSets(was.controls, was.agents, registry), compileAgentSets(now.controls, now.agents, registry));
    const sides = compileReplaySides(was, now, registry);
    const split = await replay(records, sides.before, sides.after, { common: sides.common });
    expect(split).toEqual(full);
    expect(full.changes.map((c) => `${c.from}>${c.to}:${c.count}`)).toEqual(['allow>deny:2', 'deny>steer:2']);
    expect(full.unchanged).toEqual({ allow: 1, deny: 2, steer: 1, ask: 0 });
  });
});

describe('JSON-lines sources', () => {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-replay-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const lines = [
    JSON.stringify({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DELETE FROM a' } } }),
    '{"agent_name": "bot", broken',
    '',
    JSON.stringify({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'SELECT 1' } } }),
    JSON.stringify({ agent_name: 'bot', stage: 'pre', step: { type: 'nope', name: 'run_sql', input: {} } }),
  ].join('\n');

  it('parses lines, skips malformed ones with their line numbers, and replays the rest', async () => {
    const read = parseJsonLines(lines);
    expect(read.records.map((r) => r.label)).toEqual(['line 1', 'line 4', 'line 5']);
    expect(read.skipped.count).toBe(1);
    expect(read.skipped.warnings[0]).toMatch(/^line 2: skipped, not valid JSON/);
    const report = await replay(read.records, before, after, { sourceSkipped: read.skipped });
    expect(report).toMatchObject({ total: 4, evaluated: 2, skipped: 2 });
    expect(report.warnings.map((w) => w.split(':')[0])).toEqual(['line 2', 'line 5']);
    expect(report.changes).toEqual([expect.objectContaining({ from: 'allow', to: 'deny', count: 1 })]);
  });

  it('streams a file and stops at the limit', async () => {
    const file = join(dir, 'steps.jsonl');
    writeFileSync(file, `${lines}\n`);
    const all = await readJsonLinesFile(file);
    expect(all.records).toHaveLength(3);
    expect(all.truncated).toBe(false);
    const some = await readJsonLinesFile(file, 1);
    expect(some.records.map((r) => r.label)).toEqual(['line 1']);
    expect(some.truncated).toBe(true);
  });
});
