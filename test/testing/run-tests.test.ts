import { describe, expect, it } from 'vitest';
import { reportPassed, type CaseOutcome } from '../../src/testing/index.js';
import { runOn, testDoc } from './helpers.js';

const DROP = `  - name: drop is denied
    stage: pre
    step: { type: tool, name: run_sql, input: { query: DROP TABLE x } }
    expect: { decision: deny, matched: [no-drop] }
`;

describe('runTests: passing and failing cases', () => {
  const table: Array<{ name: string; yaml: string; passed: boolean; check?: (o: CaseOutcome) => void }> = [
    { name: 'deny as expected', yaml: DROP, passed: true },
    {
      name: 'steer as expected',
      yaml: `  - name: prod
    stage: pre
    step: { type: tool, name: deploy, input: { env: prod } }
    expect: { decision: steer, matched: [steer-prod], not_matched: [no-drop] }
`,
      passed: true,
    },
    {
      name: 'log matches but the decision stays allow',
      yaml: `  - name: email
    stage: post
    step: { type: llm, name: m, input: q, output: a@b.c }
    expect: { decision: allow, matched: [log-email] }
`,
      passed: true,
    },
    {
      name: 'wrong decision',
      yaml: `  - name: select is denied?
    stage: pre
    step: { type: tool, name: run_sql, input: { query: SELECT 1 } }
    expect: { decision: deny }
`,
      passed: false,
      check: (o) => {
        expect(o.expected.decision).toBe('deny');
        expect(o.actual.decision).toBe('allow');
        expect(o.actual.deciding).toEqual([]);
      },
    },
    {
      name: 'right decision, a matched control missing',
      yaml: `  - name: drop
    stage: pre
    step: { type: tool, name: run_sql, input: { query: DROP TABLE x } }
    expect: { decision: deny, matched: [no-drop, log-email] }
`,
      passed: false,
      check: (o) => {
        expect(o.missing_matched).toEqual(['log-email']);
        expect(o.unexpected_matched).toEqual([]);
        expect(o.actual.deciding).toEqual(['no-drop']);
      },
    },
    {
      name: 'right decision, a not_matched control matched',
      yaml: `  - name: drop
    stage: pre
    step: { type: tool, name: run_sql, input: { query: DROP TABLE x } }
    expect: { decision: deny, not_matched: [no-drop] }
`,
      passed: false,
      check: (o) => expect(o.unexpected_matched).toEqual(['no-drop']),
    },
  ];
  for (const row of table) {
    it(row.name, async () => {
      const report = await runOn(testDoc(row.yaml));
      expect(report.diagnostics).toEqual([]);
      expect(report.cases).toHaveLength(1);
      const o = report.cases[0]!;
      expect(o.passed).toBe(row.passed);
      expect(reportPassed(report)).toBe(row.passed);
      expect(report.summary).toMatchObject({ total: 1, passed: row.passed ? 1 : 0, failed: row.passed ? 0 : 1, invalid: 0 });
      row.check?.(o);
    });
  }

  it('points each case at its own line in the file', async () => {
    const report = await runOn(testDoc(DROP + DROP.replace('drop is denied', 'second')));
    expect(report.cases.map((c) => [c.file, c.line, c.column])).toEqual([
      ['tests.yaml', 5, 5],
      ['tests.yaml', 9, 5],
    ]);
  });

  it('runs a case under its own agent when it names one', async () => {
    const report = await runOn(testDoc(`  - name: other agent has no drop rule
    agent: other
    stage: pre
    step: { type: tool, name: run_sql, input: { query: DROP TABLE x } }
    expect: { decision: allow }
`));
    expect(report.cases[0]).toMatchObject({ agent: 'other', passed: true });
  });
});

describe('runTests: coverage', () => {
  it('lists the enabled controls no case matched', async () => {
    const report = await runOn(testDoc(DROP));
    expect(report.coverage.exercised).toEqual(['no-drop']);
    expect(report.coverage.unexercised).toEqual(['log-email', 'other-agents-control', 'steer-prod', 'unused-deny']);
    expect(report.coverage.total).toBe(5);
  });

  it('leaves disabled controls out of coverage', async () => {
    const controls = `kind: Control
name: off
enabled: false
selector: { path: input }
evaluator: { name: regex, config: { pattern: x } }
action: { decision: deny }
---
kind: Control
name: on
selector: { path: input }
evaluator: { name: regex, config: { pattern: x } }
action: { decision: deny }
---
kind: Agent
agent_name: bot
controls: [off, on]
`;
    const report = await runOn(testDoc(`  - name: x
    stage: pre
    step: { type: tool, name: t, input: x }
    expect: { decision: deny, matched: [on], not_matched: [off] }
`), controls);
    expect(report.cases[0]!.passed).toBe(true);
    expect(report.coverage).toEqual({ total: 1, exercised: ['on'], unexercised: [] });
  });
});
