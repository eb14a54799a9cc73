// kind: Test cases with `steps`: evaluated in order in one fresh session per case.
import { describe, expect, it } from 'vitest';
import { runOn, SESSION_CONTROLS as CONTROLS } from './helpers.js';


const doc = (cases: string) => `kind: Test
name: t
agent: bot
cases:
${cases}`;

const READ = `      - { stage: post, step: { type: tool, name: read_web, input: {} }, expect: { decision: allow, matched: [mark] } }\n`;
const SEND = (decision: string) => `      - { stage: pre, step: { type: tool, name: send, input: {} }, expect: { decision: ${decision} } }\n`;

describe('multi-step test cases', () => {
  it('carry labels from one step to the next, and each case starts a fresh session', async () => {
    const report = await runOn(doc(`  - name: read then send\n    steps:\n${READ}${SEND('deny')}  - name: send alone\n    steps:\n${SEND('allow')}`), CONTROLS);
    expect(report.cases.map((c) => [c.case, c.passed])).toEqual([
      ['read then send (step 1)', true],
      ['read then send (step 2)', true],
      ['send alone (step 1)', true],
    ]);
  });

  it('fail a step whose expectation the session contradicts, at that step\'s line', async () => {
    const report = await runOn(doc(`  - name: read then send\n    steps:\n${READ}${SEND('allow')}`), CONTROLS);
    const failed = report.cases.filter((c) => !c.passed);
    expect(failed).toEqual([expect.objectContaining({ case: 'read then send (step 2)', line: 8, actual: expect.objectContaining({ decision: 'deny' }) })]);
  });

  it('refuse a case with both forms', async () => {
    const report = await runOn(doc(`  - name: both\n    stage: pre\n    steps:\n${SEND('allow')}`), CONTROLS);
    expect(report.diagnostics.map((d) => d.message).join()).toMatch(/either stage, step and expect, or steps/);
  });
});
