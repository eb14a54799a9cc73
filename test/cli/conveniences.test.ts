/**
 * The conveniences a Terraform or kubectl user reaches for that need no terminal, in-process
 * (runCliInProcess): failures as JSON on stdout with --format json, the schema as YAML,
 * completion scripts. Colour and apply's question on a real terminal, and these commands
 * through the built binary, are test/e2e/cli-conveniences.test.ts.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess } from '../support/cli-in-process.js';

const repo = join(import.meta.dirname, '../..');
let work: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'guardctl-conveniences-'));
  cpSync(join(repo, 'test/fixtures/example-controls'), join(work, 'controls'), { recursive: true });
});

afterAll(() => rmSync(work, { recursive: true, force: true }));

// None of these reaches a server: a URL nothing listens on shows that.
const cli = (args: string[]) => runCliInProcess(args, { cwd: work, env: { GUARD_URL: 'http://127.0.0.1:1' } });

describe('guardctl conveniences', () => {
  it('with --format json, a failure is JSON on stdout even when it stopped before changing anything', async () => {
    const down = await runCliInProcess(['apply', 'controls', '--format', 'json', '--server', 'http://127.0.0.1:1'], { cwd: work });
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout)).toEqual({ version: 1, error: { message: expect.stringMatching(/^cannot reach the server at http:\/\/127\.0\.0\.1:1 /), hint: null, exit_code: 1 } });
    expect(down.stderr).toMatch(/^error: cannot reach the server/);

    const missing = await cli(['plan', 'no-such-dir', '--format', 'json']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout)).toMatchObject({ version: 1, error: { message: 'no-such-dir: no such file or directory', exit_code: 1 } });

    const invalid = await cli(['apply', join(repo, 'test/fixtures/invalid/dangling-link'), '--format', 'json']);
    expect(JSON.parse(invalid.stdout)).toMatchObject({ version: 1, error: { diagnostics: [{ code: 'dangling_link', line: 11 }] } });
  });

  it('prints the schema as YAML, the same schema, and refuses other formats', async () => {
    const json = await cli(['schema']);
    const yaml = await cli(['schema', '--format', 'yaml']);
    expect(yaml.code).toBe(0);
    expect(parseYaml(yaml.stdout)).toEqual(JSON.parse(json.stdout));
    const xml = await cli(['schema', '--format', 'xml']);
    expect(xml.code).toBe(1);
    expect(xml.stderr).toContain("argument 'xml' is invalid. Allowed choices are json, yaml.");
  });

  it('prints completion scripts for bash, zsh and fish, and refuses other shells', async () => {
    for (const shell of ['bash', 'zsh', 'fish']) {
      const run = await cli(['completion', shell]);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^(#compdef guardctl\\n)?# guardctl completion for ${shell}`));
    }
    expect((await cli(['completion', 'tcsh'])).code).toBe(1);
  });
});
