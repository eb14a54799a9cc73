// A lint rule: no file of the tree may reach itself through its relative imports, type-only
// imports and re-exports included. (import-x/no-cycle skips type-only imports by design; a
// circle of types still ties two modules together, so it is held here.) The module graph is
// read with TypeScript's own import scanner and kept for the run, a file at a time.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import ts from 'typescript';

/** Relative imports of each file, resolved to the source files they name. */
const importsByFile = new Map();

function sourceOf(from, specifier) {
  if (!specifier.startsWith('.')) return null;
  const base = resolve(dirname(from), specifier);
  const stem = base.replace(/\.js$/, '');
  for (const candidate of [`${stem}.ts`, `${stem}.tsx`, base, `${base}/index.ts`]) {
    if (existsSync(candidate) && !candidate.endsWith('/')) return candidate;
  }
  return null;
}

function importsOf(file) {
  let found = importsByFile.get(file);
  if (found) return found;
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  found = info.importedFiles.map((f) => sourceOf(file, f.fileName)).filter((f) => f !== null && /\.tsx?$/.test(f));
  importsByFile.set(file, found);
  return found;
}

/** A path of imports from `start` back to `target`, or null. */
function pathBack(start, target) {
  const seen = new Set([start]);
  const queue = [[start]];
  while (queue.length > 0) {
    const path = queue.shift();
    for (const next of importsOf(path[path.length - 1])) {
      if (next === target) return path;
      if (!seen.has(next)) {
        seen.add(next);
        queue.push([...path, next]);
      }
    }
  }
  return null;
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'no import circles between source files, type-only imports included' },
    messages: { cycle: 'import circle: {{path}}' },
    schema: [],
  },
  create(context) {
    const file = context.filename;
    const check = (node) => {
      const specifier = node.source?.value;
      if (typeof specifier !== 'string') return;
      const target = sourceOf(file, specifier);
      if (target === null) return;
      const back = pathBack(target, file);
      if (back === null) return;
      const cwd = context.cwd;
      const path = [file, ...back, file].map((f) => f.slice(cwd.length + 1)).join(' -> ');
      context.report({ node: node.source, messageId: 'cycle', data: { path } });
    };
    return {
      ImportDeclaration: check,
      ExportNamedDeclaration: check,
      ExportAllDeclaration: check,
      ImportExpression: check,
    };
  },
};
