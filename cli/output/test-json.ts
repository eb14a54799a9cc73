/** `guardctl test --format json`: a stable shape, versioned (documented in docs/testing.md). */
import type { TestRunReport } from '../../src/testing/index.js';
import { reportPassed } from '../../src/testing/index.js';

export const TEST_JSON_VERSION = 1;

export function renderTestJson(report: TestRunReport): string {
  const body = {
    version: TEST_JSON_VERSION,
    directory: report.directory,
    passed: reportPassed(report),
    summary: report.summary,
    coverage: report.coverage,
    cases: report.cases,
    diagnostics: report.diagnostics,
  };
  return `${JSON.stringify(body, null, 2)}\n`;
}
