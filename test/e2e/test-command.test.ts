// `guardctl test` through the built binary against the repository's controls/ tests. Exit
// codes, formats and `plan --replay` are tested in-process: test/cli/test-command.test.ts.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { requireBuiltBinary } from './serve-process.js';

const repo = join(import.meta.dirname, '../..');

const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { cwd: repo, env });

describe('the built binary', () => {
  beforeAll(() => requireBuiltBinary());

  it('runs the repository controls/ tests: exit 0, full coverage', async () => {
    const r = await cli(['test', 'controls']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Coverage: (\d+) of \1 controls exercised/);
    expect(r.stdout).toMatch(/✓ \d+ passed, 0 failed/);
  });
});
