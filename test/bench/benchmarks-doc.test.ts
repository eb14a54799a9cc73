import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Benchmark, BenchSection } from '../../bench/harness.js';
import { formatValue, headlineBlock, HEADLINE_END, HEADLINE_START, renderBenchmarksDoc, renderHeadline, withHeadline } from '../../bench/render.js';
import { emptyResults, mergeResult, parseResults, type BenchResult } from '../../bench/results.js';
import { parseRunArgs } from '../../bench/run.js';

const root = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const results = () => parseResults(read('bench/results.json'));

/** Figures only a benchmark produces: throughput rates and CPU per request. */
const MEASURED = /\d[\d,.]*\s*(req\/s|events\/s|steps\/s|µs CPU)/;
/** The headings the docs' measurement sections had. */
const MEASUREMENT_HEADING = /^#{2,3} (Measured|Performance|Benchmarks|Speed|Cost)\b/m;

describe('docs/benchmarks.md and the README agree with bench/results.json', () => {
  it('docs/benchmarks.md is exactly what `npm run bench -- --render` writes', () => {
    expect(read('docs/benchmarks.md')).toBe(renderBenchmarksDoc(results()));
  });

  it("the README's headline table is the one rendered from the results", () => {
    expect(headlineBlock(read('README.md'))).toBe(renderHeadline(results()));
  });

  it('the other docs and the rest of the README state no measured figures and have no measurement sections', () => {
    const readme = read('README.md').replace(headlineBlock(read('README.md')) ?? '', '');
    const docs = readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md') && f !== 'benchmarks.md')
      .map((f) => ({ file: `docs/${f}`, text: read(`docs/${f}`) }));
    expect(MEASURED.exec(readme)?.[0], 'README.md').toBeUndefined();
    for (const { file, text } of docs) {
      expect(MEASUREMENT_HEADING.exec(text)?.[0], file).toBeUndefined();
      expect(MEASURED.exec(text)?.[0], file).toBeUndefined();
    }
  });

  it('every headline row has a goal it meets, or says it missed it', () => {
    const table = renderHeadline(results());
    for (const row of results().sections.flatMap((s) => s.benchmarks.flatMap((b) => b.rows)).filter((r) => r.headline)) {
      if (row.pass === false) expect(table).toContain(`${row.goal} (missed)`);
    }
  });
});

describe('the generator', () => {
  const bench = (name: string): Benchmark => ({ name, run: async () => [] });
  const section = (name: string, names: string[]): BenchSection => ({ name, chapter: 'Server', method: `how ${name} is measured`, benchmarks: names.map(bench) });
  const result = (name: string, value: number, headline = false): BenchResult => ({
    name,
    ranAt: '2026-12-06T20:00:00.000Z',
    seconds: 1,
    machine: { cpu: 'cpu', cores: 2, memoryGiB: 4, node: 'v20.0.0', os: 'Linux', loadBefore: 1, loadAfter: 2 },
    rows: [{ name: `${name} row`, value, unit: 'ratio', goal: '>= 0.5', pass: value >= 0.5, ...(headline ? { headline: { measure: name, workload: 'w' } } : {}) }],
  });

  it('merges a partial run into the existing results: other sections and benchmarks keep their figures', () => {
    const a = section('A', ['a1', 'a2']);
    const b = section('B', ['b1']);
    let r = mergeResult(emptyResults(), a, result('a1', 0.9));
    r = mergeResult(r, a, result('a2', 0.8));
    r = mergeResult(r, b, result('b1', 0.7));
    r = mergeResult(r, a, result('a1', 0.4));
    expect(r.sections.map((s) => s.name)).toEqual(['A', 'B']);
    expect(r.sections[0]!.benchmarks.map((x) => [x.name, x.rows[0]!.value])).toEqual([['a1', 0.4], ['a2', 0.8]]);
    expect(r.sections[1]!.benchmarks[0]!.rows[0]!.value).toBe(0.7);
  });

  it('drops the results of a benchmark its module no longer declares, and keeps the declared order', () => {
    let r = mergeResult(emptyResults(), section('A', ['a1', 'a2']), result('a2', 1));
    r = mergeResult(r, section('A', ['a1', 'a2']), result('a1', 1));
    r = mergeResult(r, section('A', ['a3', 'a1']), result('a3', 1));
    expect(r.sections[0]!.benchmarks.map((x) => x.name)).toEqual(['a3', 'a1']);
  });

  it('renders each figure with its method and machine, and marks a missed goal in the headline', () => {
    const r = mergeResult(emptyResults(), section('A', ['a1']), result('a1', 0.45, true));
    const doc = renderBenchmarksDoc(r);
    expect(doc).toContain('how A is measured');
    expect(doc).toContain('2 × cpu, 4 GiB, Linux, Node v20.0.0; load average 1 before, 2 after');
    expect(doc).toContain('| a1 row | 0.450 | >= 0.5 | missed |');
    expect(renderHeadline(r)).toContain('| a1 | w | 0.450 | >= 0.5 (missed) |');
  });

  it('replaces only the README block between the markers, and refuses a README without them', () => {
    const r = mergeResult(emptyResults(), section('A', ['a1']), result('a1', 0.9, true));
    const readme = `before\n${HEADLINE_START}\nold\n${HEADLINE_END}\nafter\n`;
    expect(withHeadline(readme, r)).toBe(`before\n${renderHeadline(r)}\nafter\n`);
    expect(() => withHeadline('no markers', r)).toThrow(/headline:start/);
  });

  it('formats values: thousands grouped, fractions to 3 digits, skipped rows named', () => {
    expect(formatValue(48123, 'req/s')).toBe('48,123 req/s');
    expect(formatValue(0.8049, 'ratio')).toBe('0.805');
    expect(formatValue(1234.6, 'ms')).toBe('1,235 ms');
    expect(formatValue(0, '')).toBe('skipped');
  });

  it('reads --only lists, --render and bare names, and refuses an unknown option', () => {
    expect(parseRunArgs(['--only', 'server,engine', '--render'])).toEqual({ only: ['server', 'engine'], render: true });
    expect(parseRunArgs(['--only=reload', 'tui'])).toEqual({ only: ['reload', 'tui'], render: false });
    expect(() => parseRunArgs(['--quick'])).toThrow(/unknown option --quick/);
  });
});
