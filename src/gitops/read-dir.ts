/**
 * The file-system side of loading: walks a directory for `*.yaml` / `*.yml` (recursive,
 * sorted, dotfiles and node_modules skipped) and reads them as UTF-8 text. Files that
 * cannot be YAML (binary, too large, unreadable) become diagnostics, not exceptions.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { UserError } from '../errors.js';
import type { Diagnostic } from './diagnostics.js';
import type { SourceFile } from './load.js';

export const MAX_FILE_BYTES = 1024 * 1024;

export interface ReadResult {
  /** Paths as the user typed `root` joined with the file's path below it (`controls/sql.yaml`). */
  files: SourceFile[];
  diagnostics: Diagnostic[];
}

const YAML_FILE = /\.ya?ml$/i;

/** Reads a directory (or one file); unreadable files become diagnostics. */
export async function readYamlDirectory(root: string): Promise<ReadResult> {
  let info;
  try {
    info = await stat(root);
  } catch {
    throw new UserError(`${root}: no such file or directory`, 'pass the directory that holds your *.yaml control files');
  }
  const paths = info.isDirectory() ? await walk(root) : [root];
  const files: SourceFile[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const path of paths) {
    const shown = info.isDirectory() ? join(root, relative(root, path)).split(sep).join('/') : path;
    const problem = (code: string, message: string, hint: string): Diagnostic => ({
      severity: 'error', file: shown, line: 1, column: 1, field: '', code, message, hint,
    });
    let bytes: Buffer;
    try {
      const size = (await stat(path)).size;
      if (size > MAX_FILE_BYTES) {
        diagnostics.push(problem('file_too_large', `the file is ${size} bytes; the limit is ${MAX_FILE_BYTES}`, 'split it into several files'));
        continue;
      }
      bytes = await readFile(path);
    } catch (error) {
      diagnostics.push(problem('unreadable_file', `cannot read the file: ${(error as Error).message}`, 'check its permissions'));
      continue;
    }
    const text = decodeText(bytes);
    if (text === null) {
      diagnostics.push(
        problem('binary_file', 'the file is not UTF-8 text (binary content)', 'remove it from the directory or rename it so it does not end in .yaml/.yml'),
      );
      continue;
    }
    files.push({ path: shown, text });
  }
  return { files, diagnostics };
}

/** UTF-8 text, or null for binary content (a NUL byte or invalid UTF-8). */
export function decodeText(bytes: Uint8Array): string | null {
  if (bytes.includes(0)) return null;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return text.startsWith('\uFEFF') ? text.slice(1) : text;
  } catch {
    return null;
  }
}

async function walk(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(full)));
    else if (entry.isFile() && YAML_FILE.test(entry.name)) out.push(full);
  }
  return out;
}
