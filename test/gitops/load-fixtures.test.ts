// Every broken fixture folder gives exactly its expected diagnostics (file:line:column, field, code).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { hasErrors } from '../../src/gitops/diagnostics.js';
import { loadDirectory } from '../../src/gitops/directory.js';

const root = join(import.meta.dirname, '../fixtures');
const invalid = readdirSync(join(root, 'invalid')).sort();

interface Expected {
  severity: string;
  file: string;
  line: number;
  column: number;
  field: string;
  code: string;
}

async function diagnosticsOf(dir: string): Promise<{ got: Expected[]; hints: string[]; errors: boolean }> {
  const loaded = await loadDirectory(dir, createDefaultRegistry());
  return {
    got: loaded.diagnostics.map((d) => ({
      severity: d.severity,
      file: relative(dir, d.file),
      line: d.line,
      column: d.column,
      field: d.field,
      code: d.code,
    })),
    hints: loaded.diagnostics.map((d) => d.hint),
    errors: hasErrors(loaded.diagnostics),
  };
}

describe('broken fixtures', () => {
  it('has a folder per broken case the issue names', () => {
    for (const name of ['bad-yaml', 'unknown-key', 'wrong-type', 'duplicate-name', 'dangling-link', 'bad-regex', 'unknown-evaluator', 'empty-file', 'binary-file', 'not-a-mapping']) {
      expect(invalid).toContain(name);
    }
  });

  it.each(invalid)('%s gives its expected diagnostics, each with a hint', async (name) => {
    const dir = join(root, 'invalid', name);
    const expectedPath = join(dir, 'expected.json');
    expect(existsSync(expectedPath), `${name}/expected.json`).toBe(true);
    const expected = JSON.parse(readFileSync(expectedPath, 'utf8')) as Expected[];
    const { got, hints, errors } = await diagnosticsOf(dir);
    expect(got).toEqual(expected);
    expect(errors).toBe(true);
    for (const hint of hints) expect(hint.length).toBeGreaterThan(10);
  });
});

describe('warnings', () => {
  it('reports an unlinked control, a disabled control still linked and a repeated link, without errors', async () => {
    const dir = join(root, 'warnings');
    const expected = JSON.parse(readFileSync(join(dir, 'expected.json'), 'utf8')) as Expected[];
    const { got, errors } = await diagnosticsOf(dir);
    expect(got).toEqual(expected);
    expect(errors).toBe(false);
  });
});
