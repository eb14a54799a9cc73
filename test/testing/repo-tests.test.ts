// The repository's own decision tests (controls/ and examples/) pass, with every control exercised.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { loadDirectory } from '../../src/gitops/directory.js';
import { runTests } from '../../src/testing/index.js';

const repo = join(import.meta.dirname, '../..');
const examples = [join(repo, 'examples', 'decision-tests')];

describe('the repository tests', () => {
  for (const dir of [join(repo, 'controls'), ...examples]) {
    it(`${dir.slice(repo.length + 1)}: every case passes and every control is exercised`, async () => {
      const registry = createDefaultRegistry();
      const loaded = await loadDirectory(dir, registry);
      expect(loaded.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
      expect(loaded.tests.length).toBeGreaterThan(0);
      const report = await runTests({ directory: dir, controls: loaded.controls, agents: loaded.agents, tests: loaded.tests, registry });
      expect(report.diagnostics).toEqual([]);
      expect(report.cases.filter((c) => !c.passed)).toEqual([]);
      expect(report.coverage.unexercised).toEqual([]);
    });
  }
});
