// The repository's own controls and examples must pass `guardctl validate` (errors and warnings).
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { controlValidator } from '../../src/gitops/control-validator.js';
import { loadDirectory } from '../../src/gitops/directory.js';
import { loadDocuments } from '../../src/gitops/load.js';
import { readYamlDirectory } from '../../src/gitops/read-dir.js';

const repo = join(import.meta.dirname, '../..');

describe('the repository directories', () => {
  it('controls/ is valid without warnings and holds the promised examples', async () => {
    const loaded = await loadDirectory(join(repo, 'controls'), createDefaultRegistry());
    expect(loaded.diagnostics).toEqual([]);
    expect(loaded.agents.length).toBeGreaterThanOrEqual(2);
    const decisions = new Set(loaded.controls.map((c) => c.data.action.decision));
    expect(decisions).toContain('steer');
    expect(decisions).toContain('deny');
    expect(loaded.controls.some((c) => c.data.condition)).toBe(true);
  });

  it('the control documents under examples/ are valid (the CI workflow files are not control documents)', async () => {
    const dirs = readdirSync(join(repo, 'examples'))
      .filter((name) => name !== 'ci' && statSync(join(repo, 'examples', name)).isDirectory())
      .map((name) => join(repo, 'examples', name));
    for (const dir of dirs) {
      const read = await readYamlDirectory(dir);
      const loaded = loadDocuments(read.files, { validateControl: controlValidator(createDefaultRegistry()) });
      const errors = [...read.diagnostics, ...loaded.diagnostics].filter((d) => d.severity === 'error');
      expect(errors, relative(repo, dir)).toEqual([]);
    }
  });
});
