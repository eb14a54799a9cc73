import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

  it('never skips a symbolic link silently: follows one to a file inside the directory, reports every other', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'guardctl-outside-'));
    try {
      writeFileSync(join(outside, 'secret.yaml'), 'kind: Agent\nagent_name: outside\n');
      mkdirSync(join(dir, 'shared'));
      writeFileSync(join(dir, 'shared', 'real.yml'), 'kind: Agent\nagent_name: inside\n');
      symlinkSync(join(dir, 'shared', 'real.yml'), join(dir, 'inside.yaml'));
      symlinkSync('../' + outside.split('/').pop() + '/secret.yaml', join(dir, 'escape.yaml'));
      symlinkSync(join(dir, 'missing.yaml'), join(dir, 'dangling.yaml'));
      symlinkSync(join(dir, 'shared'), join(dir, 'linked-dir'));
      symlinkSync(join(dir, 'shared', 'real.yml'), join(dir, 'notes.txt'));
      const read = await readYamlDirectory(dir);
      expect(read.files.map((f) => f.path.slice(dir.length + 1))).toEqual(['inside.yaml', 'shared/real.yml']);
      expect(read.diagnostics.map((d) => [d.file.slice(dir.length + 1), d.code, d.severity])).toEqual([
        ['dangling.yaml', 'symlink', 'error'],
        ['escape.yaml', 'symlink', 'error'],
        ['linked-dir', 'symlink', 'error'],
      ]);
      expect(read.diagnostics.map((d) => d.message)).toEqual([
        expect.stringMatching(/points to nothing/),
        expect.stringMatching(/points outside the directory/),
        expect.stringMatching(/directory.*not followed/),
      ]);
      // validate must not call such a directory valid; the followed link is read like a file
      // (here a second definition of the agent it links to).
      const loaded = await loadDirectory(dir, createDefaultRegistry());
      expect(loaded.diagnostics.filter((d) => d.severity === 'error').map((d) => d.code).sort()).toEqual(['duplicate_agent', 'symlink', 'symlink', 'symlink']);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
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
