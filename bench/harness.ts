/**
 * The benchmark harness. A benchmark module is one file, bench/<topic>.ts, that exports
 * `section`: its name, the chapter of docs/benchmarks.md it belongs to, the method text
 * (workload, baseline, how it is measured) and its benchmarks, each a named async function
 * returning rows. `npm run bench` finds every such file (bench/run.ts), runs them (or those
 * named with `--only`), merges the rows into bench/results.json and regenerates
 * docs/benchmarks.md and the README's headline table from it (bench/render.ts).
 * Speeds are reported as ratios against a baseline measured in the same run.
 */
export interface BenchRow {
  /** What was measured, for example `engine: 50 controls, 10 in scope`. */
  name: string;
  value: number;
  unit: string;
  /** The goal as text, for example `>= 0.40 of bare loop`. */
  goal?: string;
  /** Whether the goal was met; undefined when there is no goal. */
  pass?: boolean;
  note?: string;
  /** Set on the few rows the README's performance table shows. */
  headline?: Headline;
}

/** How a row reads in the README's headline table. */
export interface Headline {
  measure: string;
  /** The workload and the baseline the figure is against. */
  workload: string;
}

export interface Benchmark {
  name: string;
  run(): Promise<BenchRow[]>;
}

/** The chapters of docs/benchmarks.md, in the order they are printed. */
export const CHAPTERS = ['Server', 'Engine and evaluators', 'Observability and storage', 'GitOps, reload, testing', 'CLI, dashboard, SDK and gateway'] as const;
export type Chapter = (typeof CHAPTERS)[number];

/** What a bench module exports as `section`. */
export interface BenchSection {
  /** The section's heading in docs/benchmarks.md; `--only` matches it too. */
  name: string;
  chapter: Chapter;
  /** Markdown: the workload, the baseline and how it is measured. No figures. */
  method: string;
  benchmarks: Benchmark[];
}

/** Runs `fn` repeatedly for about `ms` milliseconds and returns operations per second. */
export function opsPerSecond(fn: () => void, ms = 1000, batch = 1000): number {
  const until = performance.now() + ms;
  let ops = 0;
  const start = performance.now();
  while (performance.now() < until) {
    for (let i = 0; i < batch; i++) fn();
    ops += batch;
  }
  return ops / ((performance.now() - start) / 1000);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return NaN;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
