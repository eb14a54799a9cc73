import { describe, expect, it } from 'vitest';
import { reportPassed } from '../../src/testing/index.js';
import { runOn, testDoc } from './helpers.js';

const GOOD = `  - name: fine
    stage: pre
    step: { type: tool, name: run_sql, input: { query: DROP TABLE x } }
    expect: { decision: deny }
`;

describe('malformed test documents and cases', () => {
  const table: Array<{ name: string; yaml: string; code: string; field: string; line: number; column: number; ran: number; also?: string }> = [
    {
      name: 'a typo in a case key',
      yaml: testDoc(`${GOOD}  - name: typo
    stage: pre
    step: { type: tool, name: run_sql, input: {} }
    expct: { decision: deny }
`),
      code: 'unknown_field', field: 'cases[1].expct', line: 12, column: 5, ran: 1, also: 'missing_field',
    },
    {
      name: 'an unknown decision',
      yaml: testDoc(`  - name: bad decision
    stage: pre
    step: { type: tool, name: run_sql, input: {} }
    expect: { decision: block }
`),
      code: 'invalid_value', field: 'cases[0].expect.decision', line: 8, column: 25, ran: 0,
    },
    {
      name: 'a step without a type',
      yaml: testDoc(`  - name: no type
    stage: pre
    step: { name: run_sql, input: {} }
    expect: { decision: allow }
`),
      code: 'missing_field', field: 'cases[0].step.type', line: 7, column: 5, ran: 0,
    },
    {
      name: 'an unknown agent on the document',
      yaml: testDoc(GOOD, 'nobody'),
      code: 'unknown_agent', field: 'agent', line: 3, column: 8, ran: 0,
    },
    {
      name: 'an unknown agent on a case',
      yaml: testDoc(`  - name: c
    agent: ghost
    stage: pre
    step: { type: tool, name: t, input: {} }
    expect: { decision: allow }
`),
      code: 'unknown_agent', field: 'cases[0].agent', line: 6, column: 12, ran: 0,
    },
    {
      name: 'an unknown control in matched',
      yaml: testDoc(`  - name: c
    stage: pre
    step: { type: tool, name: t, input: {} }
    expect:
      decision: allow
      matched: [no-drop, no-dorp]
`),
      code: 'unknown_control', field: 'cases[0].expect.matched[1]', line: 10, column: 26, ran: 0,
    },
    {
      name: 'a control the agent does not link, in matched',
      yaml: testDoc(`  - name: c
    stage: pre
    step: { type: tool, name: t, input: {} }
    expect: { decision: allow, matched: [other-agents-control] }
`),
      code: 'control_not_linked', field: 'cases[0].expect.matched[0]', line: 8, column: 42, ran: 0,
    },
    {
      name: 'a document without cases',
      yaml: 'kind: Test\nname: empty\nagent: bot\ncases: []\n',
      code: 'too_small', field: 'cases', line: 4, column: 1, ran: 0,
    },
  ];
  for (const row of table) {
    it(`${row.name} -> ${row.code} at ${row.line}:${row.column}`, async () => {
      const report = await runOn(row.yaml);
      const found = report.diagnostics.map((d) => ({ code: d.code, field: d.field, line: d.line, column: d.column, file: d.file }));
      expect(found).toContainEqual({ code: row.code, field: row.field, line: row.line, column: row.column, file: 'tests.yaml' });
      expect(found.map((d) => d.code).sort()).toEqual([row.code, ...(row.also ? [row.also] : [])].sort());
      expect(report.diagnostics[0]!.hint).not.toBe('');
      expect(report.cases).toHaveLength(row.ran);
      expect(report.summary.invalid).toBe(row.also ? 2 : 1);
      expect(reportPassed(report)).toBe(false);
    });
  }
});
