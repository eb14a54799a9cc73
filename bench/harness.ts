/**
 * The benchmark harness: each bench/<topic>.ts exports `benchmarks`, a list of named
 * async functions that measure and return rows. `npm run bench` runs them all (or those
 * named on the command line) and prints a table; results also go to bench-results/.
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
}

export interface Benchmark {
  name: string;
  run(): Promise<BenchRow[]>;
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
