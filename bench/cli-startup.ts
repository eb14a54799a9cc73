/**
 * How long the guardctl binary takes to start, against Node.js starting an empty script in
 * the same run: each command line is run in turn with the baseline, 15 times, and the
 * medians are compared. The program loads only the command that runs (cli/program.ts).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';

const MAIN = fileURLToPath(new URL('../cli/main.js', import.meta.url));
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const RUNS = 15;

/** Wall milliseconds of one run; throws when the command fails. */
function timed(args: string[]): number {
  const start = performance.now();
  const run = spawnSync(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] });
  const ms = performance.now() - start;
  if (run.status !== 0) throw new Error(`node ${args.join(' ')} exited with ${run.status}: ${run.stderr.toString()}`);
  return ms;
}

const LINES: Array<{ args: string[]; goal?: number }> = [
  { args: ['--version'], goal: 2 },
  { args: ['history', '--help'] },
  { args: ['validate', 'controls'] },
  { args: ['--help'] },
];

async function run(): Promise<BenchRow[]> {
  const baseline: number[] = [];
  const times = LINES.map(() => [] as number[]);
  for (let i = 0; i < RUNS; i++) {
    baseline.push(timed(['-e', '']));
    LINES.forEach((line, j) => times[j]!.push(timed([MAIN, ...line.args])));
  }
  const base = median(baseline);
  return [
    { name: 'node -e "" (baseline): Node.js starting an empty script', value: base, unit: 'ms', note: `median of ${RUNS}` },
    ...LINES.map((line, j): BenchRow => {
      const ms = median(times[j]!);
      const ratio = ms / base;
      return {
        name: `guardctl ${line.args.join(' ')}: start to exit / the baseline`,
        value: ratio,
        unit: 'x',
        ...(line.goal !== undefined ? { goal: `<= ${line.goal}`, pass: ratio <= line.goal } : {}),
        note: `${ms.toFixed(0)} ms, median of ${RUNS} runs taken in turn with the baseline's`,
      };
    }),
  ];
}

const benchmarks: Benchmark[] = [{ name: 'cli startup', run }];

export const section: BenchSection = {
  name: 'CLI startup',
  chapter: 'CLI, dashboard, SDK and gateway',
  method: `How long the guardctl binary takes from start to exit, against Node.js starting an empty
script (the baseline): each command line runs in turn with the baseline, 15 times, and the
medians are compared.`,
  benchmarks,
};
