// Removes stale build output so files no longer reachable from the entry points never ship.
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
rmSync(join(dirname(fileURLToPath(import.meta.url)), 'dist'), { recursive: true, force: true });
