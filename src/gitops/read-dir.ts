/**
 * The file-system side of loading: walks a directory for `*.yaml` / `*.yml` (recursive,
 * sorted, dotfiles and node_modules skipped) and reads them as UTF-8 text. Files that
 * cannot be YAML (binary, too large, unreadable) become diagnostics, not exceptions. A
 * symbolic link is never skipped silently: one to a YAML file inside the directory is
 * read like the file; one that points outside it, to nothing, or to a directory is an
 * error (a rule that is quietly not loaded is a rule that quietly does not run).
 */
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
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
  const showOf = (path: string) => (info.isDirectory() ? join(root, relative(root, path)).split(sep).join('/') : path);
  const files: SourceFile[] = [];
  const diagnostics: Diagnostic[] = [];
  const links: LinkProblem[] = [];
  const paths = info.isDirectory() ? await walk(root, await realpath(root), links) : [root];
  for (const link of links) {
    diagnostics.push({ severity: 'error', file: showOf(link.path), line: 1, column: 1, field: '', code: 'symlink', message: link.message, hint: link.hint });
  }
  for (const path of paths) {
    const shown = showOf(path);
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

interface LinkProblem {
  path: string;
  message: string;
  hint: string;
}

const COPY_HINT = 'replace the link with the file itself (or a copy), inside the directory';

/** `realRoot` is the root with its own links resolved: what "inside the directory" means. */
async function walk(dir: string, realRoot: string, links: LinkProblem[]): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(full, realRoot, links)));
    else if (entry.isFile() && YAML_FILE.test(entry.name)) out.push(full);
    else if (entry.isSymbolicLink()) {
      const followed = await followLink(full, entry.name, realRoot);
      if (typeof followed === 'string') out.push(followed);
      else if (followed) links.push(followed);
    }
  }
  return out;
}

/** The path to read for a link, a problem to report, or null for a link to a non-YAML file. */
async function followLink(path: string, name: string, realRoot: string): Promise<string | LinkProblem | null> {
  let target: string;
  try {
    target = await realpath(path);
  } catch {
    return YAML_FILE.test(name) ? { path, message: 'a symbolic link that points to nothing (its target does not exist)', hint: COPY_HINT } : null;
  }
  const info = await stat(target);
  if (info.isDirectory()) {
    return { path, message: 'a symbolic link to a directory: directories behind links are not followed, so its files are not loaded', hint: 'move the directory here, or pass it to the command as a directory of its own' };
  }
  if (!YAML_FILE.test(name)) return null;
  const below = relative(realRoot, target);
  if (below.startsWith('..') || isAbsolute(below)) {
    return { path, message: 'a symbolic link that points outside the directory; it is not loaded', hint: COPY_HINT };
  }
  return path;
}
