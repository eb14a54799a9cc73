import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** The package version, found by walking up from this file (works from src/ and dist/). */
export function packageVersion(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'guardctl' && pkg.version) return (cached = pkg.version);
    }
    const parent = dirname(dir);
    if (parent === dir) return (cached = '0.0.0');
    dir = parent;
  }
}
