/**
 * Instructions per evaluation request, counted by callgrind (valgrind): a count that moves
 * by a few percent from run to run, where throughput on a shared machine moves by tens.
 * `npm run bench:instructions [-- <warm> <measured> [workload...]]` (30,000 and 3,000 by
 * default); needs valgrind on the PATH.
 *
 * Each benchmark server (bench/server-child.ts), per workload of bench/workloads.ts (the
 * bare baseline sent that workload's bodies, then guardctl, with observability off and on;
 * for the best case also its 10 controls in shadow mode), is counted by bench/callgrind.ts:
 * warm-up requests first, then three windows of `measured` requests, the median reported
 * (where the garbage collector's major cycles fall moves a single window's count by up to
 * a quarter).
 *
 * The workload name `tracing` counts bench/otel.ts's three servers (best case, observability
 * on; tracing off, every span sampled, `traceidratio` at 0.01) exporting to a local OTLP
 * receiver: what tracing costs, with the machine's load taken out. `sessions` counts
 * bench/sessions.ts's SQLite pair (the best case with and without two session-aware
 * controls, the step sent in 64 sessions), `sessions-pg` its PostgreSQL pair (each server
 * on a fresh schema; the database's own work is not counted).
 */
import { countInstructions } from './callgrind.js';
import { median } from './harness.js';
import { startReceiver } from './otel.js';
import { dropSchemas, freshSchema } from './pg-schemas.js';
import { SESSION_BODIES } from './sessions.js';
import type { ServerSpec } from './server-process.js';
import { WORKLOADS, type WorkloadName } from './workloads.js';

/**
 * Per workload (bench/workloads.ts), the bare baseline sent the same bodies first, then the
 * guardctl servers; each count is compared with its workload's baseline.
 */
const SERVERS: Array<{ label: string; workload: WorkloadName; spec: ServerSpec; group?: 'tracing' | 'sessions' | 'sessions-pg'; baseline?: true; bodies?: readonly string[]; postgres?: true }> = [
  { label: 'bare Fastify route (baseline)', workload: 'best', spec: { kind: 'bare' } },
  { label: 'POST /api/v1/evaluation, 10 controls in scope', workload: 'best', spec: { kind: 'guard', controls: 10, observability: false } },
  { label: 'the same, observability on', workload: 'best', spec: { kind: 'guard', controls: 10, observability: true } },
  { label: 'the same 10 in shadow mode, observability on', workload: 'best', spec: { kind: 'guard', controls: 10, observability: true, mode: 'shadow' } },
  // bench/budgets.ts's pair: one rate control (counted in memory) beside the same 10.
  { label: 'the same 10 plus one rate control, observability off', workload: 'best', spec: { kind: 'guard', controls: 10, observability: false, rateLimit: 1_000_000_000 } },
  { label: 'bare Fastify route (baseline)', workload: 'realistic', spec: { kind: 'bare' } },
  { label: 'POST /api/v1/evaluation', workload: 'realistic', spec: { kind: 'guard', workload: 'realistic', observability: false } },
  { label: 'the same, observability on', workload: 'realistic', spec: { kind: 'guard', workload: 'realistic', observability: true } },
  { label: 'bare Fastify route (baseline)', workload: 'worst', spec: { kind: 'bare' } },
  { label: 'POST /api/v1/evaluation', workload: 'worst', spec: { kind: 'guard', workload: 'worst', observability: false } },
  { label: '10 controls in scope, observability on, tracing off (baseline)', workload: 'best', group: 'tracing', baseline: true, spec: { kind: 'guard', controls: 10, observability: true } },
  { label: 'the same, traceidratio 0.01', workload: 'best', group: 'tracing', spec: { kind: 'guard', controls: 10, observability: true, otel: { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' } } },
  { label: 'the same, every span sampled', workload: 'best', group: 'tracing', spec: { kind: 'guard', controls: 10, observability: true, otel: { OTEL_TRACES_SAMPLER: 'always_on' } } },
  // bench/sessions.ts's SQLite pair: both sent the step in its 64 sessions.
  { label: '10 controls in scope, steps in 64 sessions (baseline)', workload: 'best', group: 'sessions', baseline: true, bodies: SESSION_BODIES, spec: { kind: 'guard', controls: 10 } },
  { label: 'the same plus two session-aware controls', workload: 'best', group: 'sessions', bodies: SESSION_BODIES, spec: { kind: 'guard', controls: 10, sessions: true } },
  { label: 'PostgreSQL: 10 controls in scope, steps in 64 sessions (baseline)', workload: 'best', group: 'sessions-pg', baseline: true, postgres: true, bodies: SESSION_BODIES, spec: { kind: 'guard', controls: 10 } },
  { label: 'PostgreSQL: the same plus two session-aware controls', workload: 'best', group: 'sessions-pg', postgres: true, bodies: SESSION_BODIES, spec: { kind: 'guard', controls: 10, sessions: true } },
];

async function main(): Promise<void> {
  const warm = Number(process.argv[2] ?? 30_000);
  const measured = Number(process.argv[3] ?? 3_000);
  // Optional: only these workloads (best, realistic, worst).
  const only = process.argv.slice(4);
  const lines = ['| workload | server | instructions per request (median) | of the baseline | windows |', '|---|---|---|---|---|'];
  let baseline = 0;
  const receiver = only.includes('tracing') ? await startReceiver() : null;
  for (const { label, workload, spec, group, ...entry } of SERVERS) {
    if (only.length > 0 ? !only.includes(group ?? workload) : group !== undefined) continue;
    const { title } = WORKLOADS[workload];
    const bodies = entry.bodies ?? WORKLOADS[workload].bodies;
    process.stderr.write(`counting ${title}: ${label} (${warm} requests to warm up, then 3 windows of ${measured} counted)...\n`);
    const traced = spec.otel && receiver ? { ...spec, otel: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...spec.otel } } : spec;
    const schemas: string[] = [];
    let windows: number[];
    try {
      windows = await countInstructions(entry.postgres ? { ...traced, databaseUrl: await freshSchema(schemas, 'guard_bench_instr') } : traced, bodies, warm, measured);
    } finally {
      await dropSchemas(schemas);
    }
    const perRequest = median(windows);
    if (spec.kind === 'bare' || entry.baseline) baseline = perRequest;
    const each = windows.map((n) => Math.round(n).toLocaleString('en-US')).join(', ');
    lines.push(`| ${title} | ${label} | ${Math.round(perRequest).toLocaleString('en-US')} | ${(baseline / perRequest).toFixed(3)} | ${each} |`);
    // Each count as it comes: a later failure does not lose the earlier ones.
    process.stderr.write(`${lines.at(-1)!}\n`);
  }
  await receiver?.close();
  process.stdout.write(`${lines.join('\n')}\n`);
}

try {
  await main();
} catch (err) {
  process.stderr.write(`bench:instructions: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
