// What `npm run build` leaves behind: a bin the shell can run, and no output whose source
// is gone, without ever removing dist/ under a server that runs from it.
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/version.js';
import { cleanEnv, requireBuiltBinary } from './serve-process.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const FINISH = join(ROOT, 'scripts', 'finish-build.mjs');
const BIN = join(ROOT, 'dist', 'cli', 'main.js');

beforeAll(() => requireBuiltBinary());

describe('build output', () => {
  it('the bin runs without naming node, after the build has finished again', async () => {
    chmodSync(BIN, 0o644);
    await run(process.execPath, [FINISH]);
    expect(statSync(BIN).mode & 0o111).toBe(0o111);
    const { stdout } = await run(BIN, ['--version'], { env: cleanEnv() });
    expect(stdout).toBe(`${packageVersion()}\n`);
  });

  it('removes an output whose source is gone and keeps the rest', async () => {
    const stale = join(ROOT, 'dist', 'src', 'no-such-module.js');
    writeFileSync(stale, 'export {};\n');
    await run(process.execPath, [FINISH]);
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(BIN)).toBe(true);
    expect(existsSync(join(ROOT, 'dist', 'src', 'index.js'))).toBe(true);
  });
});
