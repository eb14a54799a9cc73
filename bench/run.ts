/**
 * `npm run bench [-- --only NAME[,NAME…]] [-- --render]`: runs the benchmark modules (every
 * bench/*.ts exporting `section`, see bench/harness.ts), merges their rows into
 * bench/results.json and regenerates docs/benchmarks.md and the README's headline table.
 * Results are written after each benchmark, so an interrupted run keeps what it measured.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchRow, BenchSection } from './harness.js';
import { formatValue, renderBenchmarksDoc, withHeadline } from './render.js';
import { currentLoad, describeMachine, mergeResult, parseResults, type Results } from './results.js';

const here = dirname(fileURLToPath(import.meta.url));
const RESULTS = 'bench/results.json';
const DOC = 'docs/benchmarks.md';
const README = 'README.md';

export interface RunOptions {
  only: string[];
  render: boolean;
}

/** `--only a,b` (or `--only=a,b`), `--render`; bare words count as `--only` names too. */
export function parseRunArgs(argv: string[]): RunOptions {
  const only: string[] = [];
  let render = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--render') render = true;
    else if (arg === '--only') only.push(...(argv[++i] ?? '').split(','));
    else if (arg.startsWith('--only=')) only.push(...arg.slice('--only='.length).split(','));
    else if (arg.startsWith('--')) throw new Error(`unknown option ${arg} (expected --only NAME[,NAME…] or --render)`);
    else only.push(arg);
  }
  return { only: only.map((o) => o.trim()).filter((o) => o !== ''), render };
}

/**
 * The bench modules: files of this directory that export `section`. Found by reading the
 * text rather than importing every file, since some (the server children) start a server
 * when imported.
 */
async function loadSections(): Promise<BenchSection[]> {
  const files = readdirSync(here).filter((f) => f.endsWith('.js') && /^export const section\b/m.test(readFileSync(join(here, f), 'utf8')));
  const sections: BenchSection[] = [];
  for (const file of files.sort()) {
    const mod = (await import(join(here, file))) as { section: BenchSection };
    sections.push(mod.section);
  }
  return sections;
}

const readText = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined);

function writePages(results: Results): void {
  writeFileSync(RESULTS, `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(DOC, renderBenchmarksDoc(results));
  writeFileSync(README, withHeadline(readFileSync(README, 'utf8'), results));
}

/** Sections never run yet are listed too, as not measured. */
function withEverySection(results: Results, sections: BenchSection[]): Results {
  const missing = sections.filter((s) => !results.sections.some((r) => r.name === s.name));
  return { sections: [...results.sections, ...missing.map((s) => ({ name: s.name, chapter: s.chapter, method: s.method, benchmarks: [] }))] };
}

async function main(): Promise<void> {
  const options = parseRunArgs(process.argv.slice(2));
  const sections = await loadSections();
  let results = withEverySection(parseResults(readText(RESULTS)), sections);
  if (options.render) {
    writePages(results);
    return;
  }
  const wanted = (section: BenchSection, name: string) =>
    options.only.length === 0 || options.only.some((o) => section.name.includes(o) || name.includes(o));
  let ran = 0;
  const failed: string[] = [];
  for (const section of sections) {
    for (const bench of section.benchmarks) {
      if (!wanted(section, bench.name)) continue;
      process.stderr.write(`running ${section.name}: ${bench.name}...\n`);
      const loadBefore = currentLoad();
      const started = new Date();
      let rows: BenchRow[];
      try {
        rows = await bench.run();
      } catch (error) {
        // One failing benchmark must not cost the others' figures; the run still fails.
        failed.push(`${bench.name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        process.stderr.write(`  FAILED ${failed.at(-1)}\n`);
        continue;
      }
      const seconds = (Date.now() - started.getTime()) / 1000;
      results = mergeResult(results, section, { name: bench.name, ranAt: started.toISOString(), seconds, machine: describeMachine(loadBefore), rows });
      writePages(results);
      ran++;
      for (const r of rows) {
        const verdict = r.pass === undefined ? '' : r.pass ? ' (goal met)' : ` (goal ${r.goal ?? ''} MISSED)`;
        process.stdout.write(`  ${r.name}: ${formatValue(r.value, r.unit)}${verdict}\n`);
      }
    }
  }
  if (ran === 0) throw new Error(`no benchmark matches ${options.only.join(', ')}; sections: ${sections.map((s) => s.name).join(', ')}`);
  mkdirSync('bench-results', { recursive: true });
  writeFileSync('bench-results/latest.json', JSON.stringify(results, null, 2));
  if (failed.length > 0) throw new Error(`${failed.length} benchmark(s) failed:\n${failed.join('\n')}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
