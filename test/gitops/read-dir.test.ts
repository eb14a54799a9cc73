import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UserError } from '../../src/errors.js';
import { createDefaultRegistry } from '../../src/evaluators/registry.js';
import { loadDirectory } from '../../src/gitops/directory.js';
import { MAX_FILE_BYTES, readYamlDirectory } from '../../src/gitops/read-dir.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'guardctl-read-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('readYamlDirectory', () => {
  it('walks recursively in sorted order, only *.yaml/*.yml, skipping dotfiles and node_modules', async () => {
    for (const path of ['b.yaml', 'a.yml', 'sub/c.yaml', 'sub/notes.txt', '.hidden.yaml', '.git/x.yaml', 'node_modules/m/y.yaml', 'UPPER.YAML']) {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), 'kind: Agent\nagent_name: a\n');
    }
    const read = await readYamlDirectory(dir);
    expect(read.files.map((f) => f.path.slice(dir.length + 1))).toEqual(['UPPER.YAML', 'a.yml', 'b.yaml', 'sub/c.yaml']);
    expect(read.diagnostics).toEqual([]);
  });

  it('turns an oversized file into a diagnostic instead of reading it', async () => {
    writeFileSync(join(dir, 'big.yaml'), `# ${'x'.repeat(MAX_FILE_BYTES)}\n`);
    const read = await readYamlDirectory(dir);
    expect(read.files).toEqual([]);
    expect(read.diagnostics.map((d) => d.code)).toEqual(['file_too_large']);
  });

  it('throws a UserError for a directory that does not exist', async () => {
    await expect(readYamlDirectory(join(dir, 'missing'))).rejects.toBeInstanceOf(UserError);
  });

  it('reports a directory without YAML files', async () => {
    const loaded = await loadDirectory(dir, createDefaultRegistry());
    expect(loaded.diagnostics.map((d) => d.code)).toEqual(['no_documents']);
  });
});
