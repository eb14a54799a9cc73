/** `guardctl test` for people: each failure with expected vs actual, then coverage and a summary. */
import type { CaseOutcome, TestRunReport } from '../../src/testing/index.js';
import type { Colors } from './color.js';
import { renderDiagnosticsText } from './diagnostics.js';

export function renderTestText(report: TestRunReport, sources: ReadonlyMap<string, string>, c: Colors): string {
  const out: string[] = [];
  if (report.diagnostics.length > 0) {
    // The diagnostics renderer ends with its own summary line; the test summary replaces it.
    const text = renderDiagnosticsText(report.diagnostics, sources, c).trimEnd().split('\n');
    out.push(...text.slice(0, -1));
  }
  for (const o of report.cases) if (!o.passed) out.push(...failureLines(o, c), '');
  out.push(coverageLine(report, c));
  out.push(summaryLine(report, c));
  return `${out.join('\n')}\n`;
}

export function failureLines(o: CaseOutcome, c: Colors): string[] {
  const lines = [`${c.bold(`${o.file}:${o.line}:${o.column}`)} ${c.red(c.bold('FAIL'))} ${o.test} › ${o.case}`];
  lines.push(c.dim(`  agent ${o.agent}, ${o.stage} ${o.step_type} step "${o.step_name}"`));
  if (o.expected.decision !== o.actual.decision) {
    lines.push(`  decision: expected ${c.green(o.expected.decision)}, got ${c.red(o.actual.decision)}`);
  } else {
    lines.push(`  decision: ${o.actual.decision} (as expected)`);
  }
  for (const name of o.missing_matched) lines.push(`  expected "${name}" to match; it did not`);
  for (const name of o.unexpected_matched) lines.push(`  expected "${name}" not to match; it matched`);
  lines.push(`  decided by: ${o.actual.deciding.length > 0 ? o.actual.deciding.join(', ') : '(no deny or steer control matched)'}`);
  if (o.actual.matched.length > 0) lines.push(`  matched: ${o.actual.matched.join(', ')}`);
  if (o.actual.errors.length > 0) lines.push(c.yellow(`  evaluator errors: ${o.actual.errors.join(', ')}`));
  return lines;
}

export function coverageLine(report: TestRunReport, c: Colors): string {
  const { total, exercised, unexercised } = report.coverage;
  const head = `Coverage: ${exercised.length} of ${total} control${total === 1 ? '' : 's'} exercised`;
  if (unexercised.length === 0) return c.green(head);
  return c.yellow(`${head}; never matched: ${unexercised.join(', ')}`);
}

export function summaryLine(report: TestRunReport, c: Colors): string {
  const s = report.summary;
  const parts = [`${s.passed} passed`, `${s.failed} failed`];
  if (s.invalid > 0) parts.push(`${s.invalid} invalid`);
  const text = `${parts.join(', ')} (${s.total} case${s.total === 1 ? '' : 's'} in ${s.documents} test document${s.documents === 1 ? '' : 's'})`;
  return s.failed === 0 && s.invalid === 0 ? c.green(`✓ ${text}`) : c.red(`✗ ${text}`);
}
