/**
 * What an agent project pays to install guardctl's SDK: `@guardctl/sdk` (packages/sdk)
 * packed and installed into an empty project, install scripts included (re2's native
 * build), next to the whole `guardctl` package (server, CLI, dashboard) installed the same
 * way in the same run. Both install from the npm cache where it can (the registry
 * otherwise), so the times are mostly unpacking and native builds. Slow: minutes.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Benchmark, BenchRow, BenchSection } from './harness.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '../..');

/** Bytes of every file under `dir` (symbolic links not followed). */
function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += sizeOf(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

/** Packs `workspace` (or the root package) and installs it into a fresh project: seconds and bytes. */
async function installPacked(workspace: string | null): Promise<{ seconds: number; bytes: number; packages: number }> {
  const project = mkdtempSync(join(tmpdir(), 'guardctl-install-bench-'));
  try {
    const packArgs = ['pack', '--json', '--ignore-scripts', '--pack-destination', project, ...(workspace ? ['--workspace', workspace] : [])];
    const packed = await run('npm', packArgs, { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    const { filename } = (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!;
    // The native modules' install scripts approved, as npm 11 asks a project to.
    const allowScripts = { re2: true, 'better-sqlite3': true };
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'agent', version: '1.0.0', private: true, allowScripts }));
    const start = performance.now();
    await run('npm', ['install', join(project, filename), '--prefer-offline', '--no-audit', '--no-fund'], { cwd: project, maxBuffer: 64 * 1024 * 1024 });
    const seconds = (performance.now() - start) / 1000;
    const modules = join(project, 'node_modules');
    const packages = readdirSync(modules).flatMap((n) => (n.startsWith('@') ? readdirSync(join(modules, n)) : n.startsWith('.') ? [] : [n])).length;
    return { seconds, bytes: sizeOf(modules), packages };
  } finally {
    rmSync(project, { recursive: true, force: true });
  }
}

async function measure(): Promise<BenchRow[]> {
  const sdk = await installPacked('@guardctl/sdk');
  const full = await installPacked(null);
  const mb = (b: number) => b / 1e6;
  return [
    { name: 'SDK-only project (@guardctl/sdk): install time', value: sdk.seconds, unit: 's', note: `${(sdk.seconds / full.seconds).toFixed(2)} of the full package's` },
    { name: 'SDK-only project: node_modules size', value: mb(sdk.bytes), unit: 'MB', note: `${sdk.packages} packages; ${(sdk.bytes / full.bytes).toFixed(2)} of the full package's` },
    { name: 'full guardctl package: install time (baseline)', value: full.seconds, unit: 's' },
    { name: 'full guardctl package: node_modules size (baseline)', value: mb(full.bytes), unit: 'MB', note: `${full.packages} packages` },
  ];
}

const benchmarks: Benchmark[] = [{ name: 'sdk-install size and time', run: measure }];

export const section: BenchSection = {
  name: 'SDK package install',
  chapter: 'CLI, dashboard, SDK and gateway',
  method: `\`@guardctl/sdk\` (packages/sdk) packed and installed into an empty project, install scripts
included (re2's native build), next to the whole \`guardctl\` package installed the same way
in the same run (the baseline). Both install from the npm cache where they can, so the
times are mostly unpacking and native builds. Slow: minutes.`,
  benchmarks,
};
