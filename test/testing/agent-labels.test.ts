// Decision tests may name an agent by labels: an unnamed agent guarded by the policies selecting it.
import { describe, expect, it } from 'vitest';
import { CONTROLS, runOn } from './helpers.js';

const WITH_POLICY = `${CONTROLS}---
kind: Policy
name: pci-baseline
controls: [no-drop]
agents: { match_labels: { pci: "true" } }
---
kind: Agent
agent_name: pay-bot
labels: { pci: "true" }
`;

const DROP = `    stage: pre
    step: { type: tool, name: run_sql, input: { query: DROP TABLE x } }`;

describe('decision tests by agent labels', () => {
  it('runs cases against the policies that select the labels, and against a named agent guarded by a policy only', async () => {
    const report = await runOn(
      `kind: Test
name: by labels
agent_labels: { pci: "true" }
cases:
  - name: pci agents cannot drop
${DROP}
    expect: { decision: deny, matched: [no-drop] }
  - name: other labels are not guarded
    agent_labels: { pci: "false" }
${DROP}
    expect: { decision: allow }
  - name: the named agent gets the policy too
    agent: pay-bot
${DROP}
    expect: { decision: deny, matched: [no-drop] }
`,
      WITH_POLICY,
    );
    expect(report.diagnostics).toEqual([]);
    expect(report.cases.map((c) => [c.case, c.passed])).toEqual([
      ['pci agents cannot drop', true],
      ['other labels are not guarded', true],
      ['the named agent gets the policy too', true],
    ]);
  });

  it('a wrong expectation fails, and a document naming no agent is reported', async () => {
    const report = await runOn(
      `kind: Test
name: wrong
agent_labels: { pci: "false" }
cases:
  - name: expects a deny that no policy gives
${DROP}
    expect: { decision: deny }
---
kind: Test
name: nobody
cases:
  - name: x
${DROP}
    expect: { decision: allow }
`,
      WITH_POLICY,
    );
    expect(report.cases.map((c) => c.passed)).toEqual([false]);
    expect(report.diagnostics.map((d) => [d.code, d.field])).toEqual([['missing_field', 'agent']]);
  });
});
