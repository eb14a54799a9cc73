/**
 * `guardctl test --format junit`: JUnit XML that CI systems show as test reports. One
 * testsuite per test document; invalid documents and cases become `<error>` test cases.
 */
import type { CaseOutcome, TestRunReport } from '../../src/testing/index.js';
import { failureLines } from './test-text.js';
import { colors } from './color.js';

const plain = colors(false);

export function renderTestJunit(report: TestRunReport): string {
  const suites = new Map<string, CaseOutcome[]>();
  for (const o of report.cases) {
    const list = suites.get(o.test) ?? [];
    list.push(o);
    suites.set(o.test, list);
  }
  const errors = report.diagnostics.filter((d) => d.severity === 'error');
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  out.push(
    `<testsuites name="guardctl test" tests="${report.summary.total + errors.length}" failures="${report.summary.failed}" errors="${errors.length}">`,
  );
  for (const [name, cases] of suites) {
    const failures = cases.filter((o) => !o.passed).length;
    out.push(`  <testsuite name="${attr(name)}" tests="${cases.length}" failures="${failures}" errors="0" file="${attr(cases[0]!.file)}">`);
    for (const o of cases) {
      const head = `    <testcase name="${attr(o.case)}" classname="${attr(`${o.agent}.${name}`)}" file="${attr(o.file)}" line="${o.line}"`;
      if (o.passed) {
        out.push(`${head}/>`);
        continue;
      }
      const message = o.expected.decision !== o.actual.decision ? `expected ${o.expected.decision}, got ${o.actual.decision}` : 'matched controls differ from the expectation';
      out.push(`${head}>`);
      out.push(`      <failure message="${attr(message)}" type="decision">${text(failureLines(o, plain).join('\n'))}</failure>`);
      out.push('    </testcase>');
    }
    out.push('  </testsuite>');
  }
  if (errors.length > 0) {
    out.push(`  <testsuite name="invalid test documents" tests="${errors.length}" failures="0" errors="${errors.length}">`);
    for (const d of errors) {
      out.push(`    <testcase name="${attr(`${d.file}:${d.line}:${d.column} ${d.field}`)}" classname="guardctl.diagnostics" file="${attr(d.file)}" line="${d.line}">`);
      out.push(`      <error message="${attr(d.message)}" type="${attr(d.code)}">${text(`${d.file}:${d.line}:${d.column} ${d.message}\nhint: ${d.hint}`)}</error>`);
      out.push('    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}

// XML 1.0 forbids most control characters even when escaped; drop them.
// eslint-disable-next-line no-control-regex
const INVALID_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g;

function text(value: string): string {
  return value.replace(INVALID_XML, '').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function attr(value: string): string {
  return text(value).replace(/"/g, '&quot;').replace(/'/g, '&apos;').replace(/\n/g, '&#10;').replace(/\r/g, '&#13;').replace(/\t/g, '&#9;');
}
