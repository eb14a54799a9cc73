/** `guardctl test --format github`: workflow annotations on the failing case's line. */
import type { TestRunReport } from '../../src/testing/index.js';
import { renderDiagnosticsGithub } from './diagnostics.js';
import { coverageLine, summaryLine } from './test-text.js';
import { colors } from './color.js';

const plain = colors(false);

export function renderTestGithub(report: TestRunReport): string {
  const out: string[] = [];
  // The diagnostics renderer ends with validate's own summary line; the test summary replaces it.
  if (report.diagnostics.length > 0) out.push(...renderDiagnosticsGithub(report.diagnostics).trimEnd().split('\n').slice(0, -1));
  for (const o of report.cases) {
    if (o.passed) continue;
    const problems: string[] = [];
    if (o.expected.decision !== o.actual.decision) problems.push(`expected ${o.expected.decision}, got ${o.actual.decision}`);
    for (const n of o.missing_matched) problems.push(`expected "${n}" to match`);
    for (const n of o.unexpected_matched) problems.push(`expected "${n}" not to match`);
    problems.push(`decided by: ${o.actual.deciding.join(', ') || 'no deny or steer control'}`);
    const props = `file=${prop(o.file)},line=${o.line},col=${o.column},title=${prop(`test failed: ${o.test} › ${o.case}`)}`;
    out.push(`::error ${props}::${data(problems.join('\n'))}`);
  }
  const unexercised = report.coverage.unexercised.length > 0;
  out.push(`${unexercised ? '::warning::' : '::notice::'}${data(coverageLine(report, plain))}`);
  out.push(summaryLine(report, plain));
  return `${out.join('\n')}\n`;
}

function data(text: string): string {
  return text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

function prop(text: string): string {
  return data(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
}
