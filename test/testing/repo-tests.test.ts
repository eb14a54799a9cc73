// The repository's own decision tests pass: the shipped controls/ (which users extend, so
// a control added there without a case must not fail this suite), and the fixtures and
// examples, where every control must also be exercised.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { loadDirectory } from '../../src/gitops/directory.js';
import { runTests } from '../../src/testing/index.js';

const repo = join(import.meta.dirname, '../..');
const dirs = [
  { dir: join(repo, 'controls'), everyControlExercised: false },
  { dir: join(repo, 'test', 'fixtures', 'example-controls'), everyControlExercised: true },
  { dir: join(repo, 'examples', 'decision-tests'), everyControlExercised: true },
];

describe('the repository tests', () => {
  for (const { dir, everyControlExercised } of dirs) {
    it(`${dir.slice(repo.length + 1)}: every case passes${everyControlExercised ? ' and every control is exercised' : ''}`, async () => {
      const registry = createDefaultRegistry();
      const loaded = await loadDirectory(dir, registry);
      expect(loaded.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
      expect(loaded.tests.length).toBeGreaterThan(0);
      const report = await runTests({ directory: dir, controls: loaded.controls, agents: loaded.agents, tests: loaded.tests, registry });
      expect(report.diagnostics).toEqual([]);
      expect(report.cases.filter((c) => !c.passed)).toEqual([]);
      if (everyControlExercised) expect(report.coverage.unexercised).toEqual([]);
    });
  }
});
