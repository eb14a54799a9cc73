import type { Command } from 'commander';
import { UserError } from '../../src/errors.js';
import { runTests, reportPassed, type TestRunReport } from '../../src/testing/index.js';
import { withExamples } from '../help.js';
import { formatOption } from '../options.js';
import { colors, shouldColor } from '../output/color.js';
import { loadValidDirectory } from '../output/directory.js';
import { renderTestGithub } from '../output/test-github.js';
import { renderTestJson } from '../output/test-json.js';
import { renderTestJunit } from '../output/test-junit.js';
import { renderTestText } from '../output/test-text.js';
import { createRegistryFromEnv } from '../../src/evaluators/registry.js';

export type TestFormat = 'text' | 'json' | 'github' | 'junit';

export interface TestCommandOptions {
  format: TestFormat;
}

export function registerTest(program: Command): void {
  const command = program
    .command('test')
    .description('Run the decision tests (kind: Test documents) kept beside the controls, offline')
    .argument('[dir]', 'the controls directory', 'controls')
    .addOption(formatOption(['text', 'json', 'github', 'junit']))
    .action(async (dir: string, options: TestCommandOptions) => {
      process.exitCode = await runTestCommand(dir, options);
    });
  withExamples(command, [
    ['run the decision tests kept beside the controls (offline, no server)', 'guardctl test controls'],
    ['a JUnit report for CI', 'guardctl test controls --format junit > junit.xml'],
    ['in a GitHub workflow: annotations on the failing cases', 'guardctl test controls --format github'],
  ]);
}

/** Exit code: 0 when every case ran and passed, 1 otherwise. */
export async function runTestCommand(dir: string, options: TestCommandOptions, write: (text: string) => void = (t) => process.stdout.write(t)): Promise<number> {
  const report = await testDirectory(dir);
  write(renderTestReport(report, options.format, new Map()));
  return reportPassed(report) ? 0 : 1;
}

export async function testDirectory(dir: string): Promise<TestRunReport & { sources?: Map<string, string> }> {
  const loaded = await loadValidDirectory(dir);
  if (loaded.tests.length === 0) {
    throw new UserError(`${dir} holds no kind: Test documents`, 'add a file with "kind: Test" beside the controls (docs/testing.md shows one)');
  }
  const registry = await createRegistryFromEnv(process.env);
  const report = await runTests({ directory: dir, controls: loaded.controls, agents: loaded.agents, policies: loaded.policies, tests: loaded.tests, registry });
  return { ...report, sources: new Map(loaded.files.map((f) => [f.path, f.text])) };
}

export function renderTestReport(report: TestRunReport & { sources?: Map<string, string> }, format: TestFormat, fallbackSources: Map<string, string>): string {
  switch (format) {
    case 'json':
      return renderTestJson(stripSources(report));
    case 'github':
      return renderTestGithub(report);
    case 'junit':
      return renderTestJunit(report);
    case 'text':
      return renderTestText(report, report.sources ?? fallbackSources, colors(shouldColor(process.stdout)));
  }
}

function stripSources(report: TestRunReport & { sources?: unknown }): TestRunReport {
  const { sources: _sources, ...rest } = report;
  return rest;
}
