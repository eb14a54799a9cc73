/**
 * The SDK alone (packages/sdk, `@guardctl/sdk`), as an agent project installs it: packed
 * with `npm pack`, installed from the tarball into an empty project (from the local npm
 * cache when it can, else the registry). Nothing of the server may come along
 * (better-sqlite3, fastify, ink, pg, ...), and every entry point must load with only what
 * the package declares. packages/sdk/dist is what `npm run build` (and so `npm test`)
 * built: packed as it is, without prepack's rebuild.
 *
 * Install scripts are skipped here (re2's native build takes minutes on this machine; the
 * benchmark `npm run bench -- sdk-install` measures a full install, build included), and
 * re2's addon is taken from this repository's own build so that the entry points can load.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let project: string;
let tarball: string;

beforeAll(async () => {
  if (!existsSync(join(root, 'packages/sdk/dist/sdk/index.js'))) throw new Error('packages/sdk/dist is missing: run npm run build first');
  project = mkdtempSync(join(tmpdir(), 'guardctl-sdk-consumer-'));
  const packed = await run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', project, '--workspace', '@guardctl/sdk'], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
  const { filename } = (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!;
  tarball = join(project, filename);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'agent', version: '1.0.0', type: 'module', private: true }));
  await run(npm, ['install', tarball, '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: project, maxBuffer: 16 * 1024 * 1024 });
  cpSync(join(root, 'node_modules/re2/build'), join(project, 'node_modules/re2/build'), { recursive: true });
}, 180_000);

afterAll(() => {
  rmSync(project, { recursive: true, force: true });
});

describe('@guardctl/sdk installed alone', () => {
  it('brings nothing of the server: no better-sqlite3, fastify, ink, pg, chokidar, prom-client, react', () => {
    const installed = readdirSync(join(project, 'node_modules'));
    for (const name of ['better-sqlite3', 'fastify', 'ink', 'pg', 'chokidar', 'prom-client', 'react', 'pino', 'commander', 'yaml']) {
      expect(installed, name).not.toContain(name);
    }
    // The frameworks are optional peers: not installed unless the agent asks for them.
    expect(installed).not.toContain('ai');
    expect(existsSync(join(project, 'node_modules/@langchain'))).toBe(false);
    expect(existsSync(join(project, 'node_modules/@modelcontextprotocol'))).toBe(false);
    expect(installed).toEqual(expect.arrayContaining(['@guardctl', 'zod', 're2', 'ajv', 'ajv-formats']));
  });

  it('loads the SDK with only its declared dependencies', async () => {
    const { stdout } = await run(process.execPath, [
      '--input-type=module',
      '-e',
      "const s = await import('@guardctl/sdk'); const t = await import('@guardctl/sdk/openai-agents'); const a = await import('@guardctl/sdk/ai-sdk');" +
        'console.log(typeof s.init, typeof s.GuardAgent, typeof s.ControlViolationError, typeof t.guardrailsFor, typeof a.guardTools)',
    ], { cwd: project });
    expect(stdout.trim()).toBe('function function function function function');
  });

  it('runs json and sql controls in the agent process; without the optional libpg-query, sql configs are refused saying why', async () => {
    const script =
      "const s = await import('@guardctl/sdk'); const r = s.createDefaultRegistry();" +
      "const sql = r.compile('sql', { blocked_operations: ['drop'] });" +
      "const json = r.compile('json', { schema: { type: 'object', required: ['a'] } });" +
      "console.log(sql.ok ? (await sql.compiled.check('SELECT 1; DROP/**/TABLE x')).message : sql.issues[0].message, '|', json.ok && json.compiled.check({}).matched)";
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project });
    expect(stdout.trim()).toBe('statement 2: drop is blocked | true');
    // Long texts are parsed and searched on threads of the agent's process: the installed package finds the parser and RE2 there too.
    const long =
      "const s = await import('@guardctl/sdk'); const r = s.createDefaultRegistry();" +
      "const sql = r.compile('sql', { blocked_operations: ['drop'] });" +
      "const text = 'SELECT ' + Array.from({ length: 2000 }, (_, i) => 'c' + i).join(', ') + ' FROM t; DROP TABLE x';" +
      "const out = sql.compiled.check(text); const re = r.compile('regex', { pattern: 'DROP TABLE' }).compiled.check(text.repeat(2));" +
      'console.log(out instanceof Promise, (await out).message, re instanceof Promise, (await re).matched)';
    // (Threads inherit --input-type=module; they run CommonJS source, so the pools leave that flag out.)
    expect((await run(process.execPath, ['--input-type=module', '-e', long], { cwd: project })).stdout.trim()).toBe('true statement 2: drop is blocked true true');
    const pgQuery = join(project, 'node_modules/libpg-query');
    renameSync(pgQuery, `${pgQuery}.away`);
    try {
      const without = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project });
      expect(without.stdout.trim()).toMatch(/^the sql evaluator needs the package libpg-query .* \| true$/);
    } finally {
      renameSync(`${pgQuery}.away`, pgQuery);
    }
  });

  it('names the missing framework when an adapter needing it at run time is imported without it', async () => {
    const error = await run(process.execPath, ['--input-type=module', '-e', "await import('@guardctl/sdk/langchain')"], { cwd: project }).catch((e: unknown) => e);
    expect(String((error as { stderr?: string }).stderr)).toContain("'@langchain/core'");
  });
});
