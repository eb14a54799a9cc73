/**
 * The framework examples, built, run as a person runs them: against `guardctl serve
 * --watch controls` (this repository's controls), each with its framework's scripted
 * model, no network and no key. Each shows allow, deny and steer.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, requireBuiltBinary, startServeProcess, type ServeProcess } from './serve-process.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');

let server: ServeProcess;
beforeAll(async () => {
  requireBuiltBinary();
  server = await startServeProcess({ args: ['--db', ':memory:', '--watch', join(root, 'controls')] });
});
afterAll(async () => {
  await server.stop();
});

const examples: Array<[string, string, RegExp]> = [
  ['ai-sdk', 'dist/examples/ai-sdk/agent.js', /STEER/],
  ['langchain', 'dist/examples/langchain/agent.js', /\[error\] Not run/],
  ['openai-agents', 'dist/examples/openai-agents/agent.js', /STEER/],
  ['mcp', 'dist/examples/mcp/client.js', /REFUSED deploy/],
];

describe('examples/', () => {
  for (const [name, file, steerLine] of examples) {
    it(`${name}: allows a bounded query, denies DROP TABLE, steers a production deploy`, async () => {
      const { stdout } = await run(process.execPath, [join(root, file)], { env: cleanEnv({ GUARD_URL: server.url }), timeout: 60_000 });
      expect(stdout).toContain('model reads: ');
      expect(stdout).toMatch(/allow\s+run_sql .*WHERE customer_id = 42/);
      expect(stdout).toContain('3 rows for: SELECT id, status FROM orders WHERE customer_id = 42');
      expect(stdout).toContain('Blocked by control "block-destructive-sql": this call was not run.');
      expect(stdout).toMatch(steerLine);
      expect(stdout).toContain('Production deploys need a change ticket and a successful dry run.');
      expect(stdout).toContain('- add the change ticket id as input.ticket');
      expect(stdout).not.toContain('deployed api to production');
    });
  }
});
