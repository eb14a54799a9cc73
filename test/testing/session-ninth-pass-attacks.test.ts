// kind: Test multi-step cases (issue #37, ninth pass): every case starts its own fresh session.
import { describe, expect, it } from 'vitest';
import { runOn, SESSION_CONTROLS as CONTROLS } from './helpers.js';


const READ = `      - { stage: post, step: { type: tool, name: read_web, input: {} }, expect: { decision: allow, matched: [mark] } }\n`;
const SEND = `      - { stage: pre, step: { type: tool, name: send, input: {} }, expect: { decision: allow } }\n`;

describe('multi-step cases of test documents named alike', () => {
  it('a case of one document does not see the labels a case of another added, whatever their names', async () => {
    const tests = [
      `kind: Test\nname: suite\nagent: bot\ncases:\n  - name: reads\n    steps:\n${READ}`,
      `kind: Test\nname: suite\nagent: bot\ncases:\n  - name: sends\n    steps:\n${SEND}`,
      `kind: Test\nname: a:0\nagent: bot\ncases:\n  - name: reads\n    steps:\n${READ}`,
      `kind: Test\nname: a\nagent: bot\ncases:\n  - name: first\n    steps:\n${SEND}  - name: second\n    steps:\n${SEND}`,
    ].join('---\n');
    const report = await runOn(tests, CONTROLS);
    expect(report.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(report.cases.map((c) => [c.test, c.case, c.passed])).toEqual([
      ['suite', 'reads (step 1)', true],
      ['suite', 'sends (step 1)', true],
      ['a:0', 'reads (step 1)', true],
      ['a', 'first (step 1)', true],
      ['a', 'second (step 1)', true],
    ]);
  });

  it('a rate control counts the cases of each document in counters of its own, whatever their names', async () => {
    const controls = `kind: Control
name: once-a-minute
scope: { step_names: [send], stages: [pre] }
selector: { path: name }
evaluator: { name: rate, config: { limit: 1, window: 1m } }
action: { decision: deny }
---
kind: Agent
agent_name: bot
controls: [once-a-minute]
`;
    const step = (decision: string) => `  - name: sends\n    stage: pre\n    step: { type: tool, name: send, input: {} }\n    expect: { decision: ${decision} }\n`;
    const report = await runOn([`kind: Test\nname: suite\nagent: bot\ncases:\n${step('allow')}${step('deny')}`, `kind: Test\nname: suite\nagent: bot\ncases:\n${step('allow')}`].join('---\n'), controls);
    expect(report.cases.map((c) => [c.test, c.passed])).toEqual([['suite', true], ['suite', true], ['suite', true]]);
  });
});
