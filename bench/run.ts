import { mkdirSync, writeFileSync } from 'node:fs';
import type { Benchmark, BenchRow } from './harness.js';

/** Every benchmark module, in the order their results are printed. */
const modules: Array<() => Promise<{ benchmarks: Benchmark[] }>> = [
  () => import('./workload-throughput.js'),
  () => import('./server.js'),
  () => import('./engine.js'),
  () => import('./regex-cost.js'),
  () => import('./evaluators.js'),
  () => import('./eval.js'),
  () => import('./json-sql.js'),
  () => import('./observability.js'),
  () => import('./tui.js'),
  () => import('./gitops.js'),
  () => import('./cli-startup.js'),
  () => import('./sdk.js'),
  () => import('./mcp.js'),
  () => import('./sdk-install.js'),
  () => import('./store.js'),
  () => import('./reload.js'),
  () => import('./postgres.js'),
  () => import('./replay.js'),
  () => import('./shadow.js'),
  () => import('./otel.js'),
  () => import('./budgets.js'),
];

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const rows: Array<BenchRow & { group: string }> = [];
  for (const load of modules) {
    const { benchmarks } = await load();
    for (const bench of benchmarks) {
      if (only.length > 0 && !only.some((o) => bench.name.includes(o))) continue;
      process.stderr.write(`running ${bench.name}...\n`);
      for (const row of await bench.run()) rows.push({ group: bench.name, ...row });
    }
  }
  const lines = rows.map((r) => {
    const verdict = r.pass === undefined ? '' : r.pass ? 'PASS' : 'MISS';
    const value = Number.isInteger(r.value) ? String(r.value) : r.value.toPrecision(4);
    return `| ${r.name} | ${value} ${r.unit} | ${r.goal ?? ''} | ${verdict} | ${r.note ?? ''} |`;
  });
  const table = ['| measure | value | goal | | note |', '|---|---|---|---|---|', ...lines].join('\n');
  process.stdout.write(`${table}\n`);
  mkdirSync('bench-results', { recursive: true });
  writeFileSync('bench-results/latest.json', JSON.stringify(rows, null, 2));
  writeFileSync('bench-results/latest.md', `${table}\n`);
}

await main();
