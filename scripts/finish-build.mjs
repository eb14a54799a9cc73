// Runs after `tsc` has written dist/. It never removes dist/ as a whole: a server or a
// dashboard started from this clone keeps running (and keeps loading its lazy modules)
// while the clone is built again.
import { chmodSync, existsSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const dist = join(root, 'dist');
const OUTPUT_SUFFIXES = ['.d.ts.map', '.js.map', '.d.ts', '.js'];
const SOURCE_SUFFIXES = ['.ts', '.tsx', '.mts'];

/** Deletes outputs whose source is gone, so a deleted or renamed module never lingers. */
function pruneStale(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      pruneStale(path);
      if (readdirSync(path).length === 0) rmdirSync(path);
      continue;
    }
    const suffix = OUTPUT_SUFFIXES.find((s) => entry.name.endsWith(s));
    if (suffix === undefined) continue;
    const base = join(root, relative(dist, path)).slice(0, -suffix.length);
    if (!SOURCE_SUFFIXES.some((s) => existsSync(base + s))) rmSync(path);
  }
}

if (existsSync(dist)) pruneStale(dist);
// tsc writes files without the executable bit; the bin must keep it after every build.
chmodSync(join(dist, 'cli', 'main.js'), 0o755);
