/**
 * PURE: raw `kind: Test` documents -> runnable cases plus diagnostics with positions.
 * A malformed case is reported and skipped; the other cases of its document still run.
 */
import { z } from 'zod';
import type { Diagnostic } from '../gitops/diagnostics.js';
import { classifyIssue, hintFor } from '../gitops/hints.js';
import type { LoadedTest, Span } from '../gitops/load.js';
import { parseFieldPath } from '../gitops/positions.js';
import { TestCaseSchema, TestDocumentSchema, fieldIssuesOf, type FieldIssue, type Labels, type TestStep } from '../model/index.js';

/** One step to evaluate: a single-step case, or one step of a case with `steps`. */
export interface RunnableCase {
  test: string;
  /** The test document's place among all of them: documents may share a name, even in one file. */
  document: number;
  agent: string;
  index: number;
  testCase: { name: string } & TestStep;
  /** The case's session, for the steps of a case with `steps` (one fresh session per case, named by document and case place). */
  session: string | undefined;
  file: string;
  line: number;
  column: number;
}

export interface CheckedTests {
  cases: RunnableCase[];
  diagnostics: Diagnostic[];
  documents: number;
}

export interface KnownNames {
  /** Agent name -> the names of its linked controls. */
  agents: ReadonlyMap<string, ReadonlySet<string>>;
  /** Every control the directory defines. */
  controls: ReadonlySet<string>;
  /** The key and controls of an unnamed agent with these labels (its policies'); absent: labels are not supported. */
  byLabels?: (labels: Labels) => { key: string; controls: ReadonlySet<string> };
}

// The document without its cases: each case is parsed on its own so one typo skips one case.
const TestHeaderSchema = TestDocumentSchema.extend({ cases: z.array(z.unknown()).min(1, 'a test document needs at least one case') });

export function checkTests(tests: readonly LoadedTest[], known: KnownNames): CheckedTests {
  const cases: RunnableCase[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const [document, doc] of tests.entries()) {
    const at = (field: string, atKey = false): Span =>
      doc.locate ? doc.locate(field, atKey) : { line: doc.source.line, column: doc.source.column, endLine: doc.source.line, endColumn: doc.source.column };
    const report = (field: string, code: string, message: string, hint: string, severity: Diagnostic['severity'] = 'error') => {
      const span = at(field, code === 'unknown_field');
      diagnostics.push({ severity, file: doc.source.file, line: span.line, column: span.column, endLine: span.endLine, endColumn: span.endColumn, field, code, message, hint });
    };
    const reportIssue = (issue: FieldIssue) => {
      // zod words a missing field differently per type (invalid_type, invalid_value); the data decides.
      const missing = issue.field !== '' && valueAt(doc.value, parseFieldPath(issue.field)) === undefined;
      const code = missing ? 'missing_field' : classifyIssue(issue);
      const message = missing ? `${issue.field}: required field is missing` : issue.field ? `${issue.field}: ${issue.message}` : issue.message;
      report(issue.field, code, message, hintFor(code, issue.field, issue.message));
    };

    const header = TestHeaderSchema.safeParse(doc.value);
    if (!header.success) {
      for (const issue of fieldIssuesOf(header.error)) reportIssue(issue);
      continue;
    }
    const name = header.data.name;
    const lookup = (agent: string | undefined, labels: Labels | undefined): { key: string; controls: ReadonlySet<string> | undefined } | null => {
      if (agent !== undefined) return { key: agent, controls: known.agents.get(agent) };
      if (labels !== undefined && known.byLabels) return known.byLabels(labels);
      return null;
    };
    const docTarget = lookup(header.data.agent, header.data.agent_labels);
    if (header.data.agent !== undefined && header.data.agent_labels !== undefined) {
      report('agent_labels', 'custom', `test "${name}" names both agent and agent_labels`, 'keep one: a named agent, or the labels of an unnamed one');
      continue;
    }
    const docAgent = docTarget?.key ?? '';
    if (docTarget === null) {
      report('agent', 'missing_field', `test "${name}" names no agent`, 'add agent: <name> or agent_labels: {key: value}');
      continue;
    }
    if (docTarget.controls === undefined) {
      report('agent', 'unknown_agent', `test "${name}" names agent "${docAgent}", which no kind: Agent document defines`, agentHint(known));
      continue;
    }
    header.data.cases.forEach((raw, index) => {
      const parsed = TestCaseSchema.safeParse(raw);
      if (!parsed.success) {
        for (const issue of fieldIssuesOf(parsed.error, ['cases', index])) reportIssue(issue);
        return;
      }
      const testCase = parsed.data;
      const target = testCase.agent !== undefined || testCase.agent_labels !== undefined ? lookup(testCase.agent, testCase.agent_labels) : docTarget;
      const agent = target?.key ?? docAgent;
      const linked = target?.controls;
      if (linked === undefined) {
        report(`cases[${index}].agent`, 'unknown_agent', `case "${testCase.name}" names agent "${agent}", which no kind: Agent document defines`, agentHint(known));
        return;
      }
      let ok = true;
      const steps: Array<{ at: string; step: TestStep }> =
        testCase.steps !== undefined
          ? testCase.steps.map((step, j) => ({ at: `cases[${index}].steps[${j}]`, step }))
          : [{ at: `cases[${index}]`, step: { stage: testCase.stage!, step: testCase.step!, expect: testCase.expect! } }];
      for (const { at: where, step } of steps) for (const list of ['matched', 'not_matched'] as const) {
        (step.expect[list] ?? []).forEach((control, j) => {
          const field = `${where}.expect.${list}[${j}]`;
          if (!known.controls.has(control)) {
            ok = false;
            report(field, 'unknown_control', `case "${testCase.name}" names control "${control}", which no kind: Control document defines`, 'fix the spelling or add the control');
          } else if (!linked.has(control) && list === 'matched') {
            ok = false;
            report(field, 'control_not_linked', `case "${testCase.name}" expects control "${control}" to match, but agent "${agent}" does not link it`, `add "${control}" to the controls of agent "${agent}" or set the case's agent`);
          }
        });
      }
      if (!ok) return;
      const session = testCase.steps === undefined ? undefined : `test:${document}:${index}`;
      steps.forEach(({ at: where, step }, j) => {
        const span = at(where);
        const caseName = session === undefined ? testCase.name : `${testCase.name} (step ${j + 1})`;
        cases.push({ test: name, document, agent, index, testCase: { name: caseName, ...step }, session, file: doc.source.file, line: span.line, column: span.column });
      });
    });
  }
  return { cases, diagnostics, documents: tests.length };
}

function agentHint(known: KnownNames): string {
  const names = [...known.agents.keys()].sort();
  return names.length > 0 ? `use one of: ${names.join(', ')}` : 'add a kind: Agent document that links the controls under test';
}

function valueAt(value: unknown, path: ReadonlyArray<string | number>): unknown {
  let node = value;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string | number, unknown>)[key];
  }
  return node;
}
