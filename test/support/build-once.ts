/**
 * The e2e project's globalSetup: builds the project once, before any test that runs
 * compiled JavaScript (the `guardctl` binary, the package's entry points, the SDK package),
 * and only when a source is newer than the build. `npm test` has just built, so there it
 * only compares file times; a developer running one end-to-end file after an edit gets a
 * fresh build instead of a test of yesterday's code. It emits without the type check
 * (`npm run build:js`): checking types is `npm run check`'s work, and the tests need only
 * the JavaScript, which is the same either way.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

/** What the build reads (tsconfig.build.json's include, the SDK package, the build's own files). */
const SOURCE_DIRS = ['src', 'cli', 'bench', 'examples', 'packages/sdk'];
const SOURCE_FILES = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/finish-build.mjs', 'packages/sdk/tsconfig.json', 'packages/sdk/package.json'];
/** What it writes last in each of its two steps: the older of the two is when the build finished. */
const OUTPUTS = ['dist/cli/main.js', 'packages/sdk/dist/sdk/index.js'];

function newestSource(): { file: string; mtimeMs: number } {
  let newest = { file: '', mtimeMs: 0 };
  const consider = (file: string) => {
    const { mtimeMs } = statSync(file);
    if (mtimeMs > newest.mtimeMs) newest = { file, mtimeMs };
  };
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'dist') walk(path);
      } else if (/\.(tsx?|mts)$/.test(entry.name)) consider(path);
    }
  };
  for (const file of SOURCE_FILES) consider(join(ROOT, file));
  for (const dir of SOURCE_DIRS) walk(join(ROOT, dir));
  return newest;
}

/** Why the build is out of date, or null when it is current. */
export function staleReason(): string | null {
  const missing = OUTPUTS.find((file) => !existsSync(join(ROOT, file)));
  if (missing) return `${missing} is missing`;
  const builtAt = Math.min(...OUTPUTS.map((file) => statSync(join(ROOT, file)).mtimeMs));
  const newest = newestSource();
  return newest.mtimeMs > builtAt ? `${newest.file.slice(ROOT.length + 1)} changed after the last build` : null;
}

export default function buildOnce(): void {
  // GUARDCTL_MAIN points the end-to-end tests at another build: not ours to refresh.
  if (process.env.GUARDCTL_MAIN) return;
  const reason = staleReason();
  if (reason === null) return;
  process.stderr.write(`building first (${reason}): npm run build:js\n`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const built = spawnSync(npm, ['run', 'build:js'], { cwd: ROOT, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`npm run build:js failed (exit ${built.status}); the end-to-end tests need it:\n${built.stdout}${built.stderr}`);
}
