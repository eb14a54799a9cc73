/**
 * POST /api/v1/evaluation throughput on the three workloads of bench/workloads.ts, each
 * as a ratio to bench/server.ts's bare Fastify baseline sent the same bodies in the same
 * run (paired, interleaved rounds measured as CPU per request and throughput, see
 * bench/interleaved.ts), with the work each evaluation did: controls
 * in scope, evaluator checks called and calls into RE2 per request, counted by a separate
 * counting server sent the same steps (bench/work-counter.ts), never assumed.
 * - best case: observability off; the server's own path when no evaluator has to run.
 * - realistic: observability off, on (SQLite file, the default deployment) and on with
 *   PostgreSQL (when GUARD_TEST_PG_URL is reachable), all in the same rounds.
 * - worst allowed: observability off.
 */
import type { EvaluationResult } from '../src/model/index.js';
import type { Benchmark, BenchRow, BenchSection, Headline } from './harness.js';
import { freshSchema, PG_URL, withAdmin } from './pg-schemas.js';
import { interleavedRounds, sideNote } from './interleaved.js';
import { LOAD, ROUNDS } from './server.js';
import { startServerProcess, type ServerSpec } from './server-process.js';
import { WORKLOADS, type Workload, type WorkloadName } from './workloads.js';

/** What one request of a step cost, counted. */
interface StepWork {
  inScope: number;
  checks: number;
  re2: number;
  matches: number;
  decision: string;
}

export interface WorkReport {
  /** Per request, averaged over the workload's steps (sent equally often). */
  inScope: number;
  checks: number;
  re2: number;
  matches: number;
  /** Each step's own figures, in the order sent. */
  steps: StepWork[];
}

/** Sends each body `rounds` times in turn; scan groups need 64 evaluations of a step to form. */
const WARM_ROUNDS = 100;
const COUNTED = 20;

async function post(url: string, body: string): Promise<EvaluationResult> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as EvaluationResult;
}

/**
 * Counts the work of each step on a counting server started from `spec` (a workload's
 * controls by default), once warm. Observability is off there: it changes what is recorded
 * of an evaluation, not which checks run.
 */
export async function countWork(workload: Pick<Workload, 'name' | 'bodies'>, spec: Partial<ServerSpec> = {}): Promise<WorkReport> {
  const server = await startServerProcess({ kind: 'guard', workload: workload.name, ...spec, observability: false, countWork: true });
  try {
    for (let i = 0; i < WARM_ROUNDS; i++) for (const body of workload.bodies) await post(server.url, body);
    const steps: StepWork[] = [];
    for (const body of workload.bodies) {
      const before = (await server.stats()).work!;
      let last: EvaluationResult | undefined;
      for (let i = 0; i < COUNTED; i++) last = await post(server.url, body);
      const after = (await server.stats()).work!;
      const r = last!;
      steps.push({
        inScope: r.matches.length + r.non_matches.length + r.errors.length + (r.shadow_matches?.length ?? 0),
        checks: (after.checks - before.checks) / COUNTED,
        re2: (after.re2 - before.re2) / COUNTED,
        matches: r.matches.length,
        decision: r.decision,
      });
    }
    const mean = (pick: (s: StepWork) => number) => steps.reduce((n, s) => n + pick(s), 0) / steps.length;
    return { inScope: mean((s) => s.inScope), checks: mean((s) => s.checks), re2: mean((s) => s.re2), matches: mean((s) => s.matches), steps };
  } finally {
    await server.close();
  }
}

/** One line for a table note: the work per request, and per step when there are several. */
export function workNote(w: WorkReport): string {
  const f = (n: number) => (Number.isInteger(n) ? String(n) : n.toFixed(2));
  const total = `per request: ${f(w.inScope)} controls in scope, ${f(w.checks)} evaluator checks, ${f(w.re2)} RE2 calls, ${f(w.matches)} matches`;
  if (w.steps.length < 2) return total;
  const each = w.steps.map((s) => `${s.inScope}/${f(s.checks)}/${f(s.re2)}${s.matches ? ` ${s.decision}` : ''}`).join(', ');
  return `${total}; by step (in scope/checks/RE2): ${each}`;
}

interface Side {
  label: string;
  spec: ServerSpec;
  goal?: { text: string; min: number };
  /** Shown in the README's performance table. */
  headline?: Headline;
}

/** Fresh sets of processes per workload. */
const SETS = 2;
const SETTING = `${LOAD.connections} connections; ${SETS} sets of fresh processes x ${ROUNDS.rounds} interleaved rounds of ${ROUNDS.seconds} s (bench/interleaved.ts); medians`;

async function pgUrlOrWhyNot(schemas: string[]): Promise<{ url: string } | { why: string }> {
  try {
    await withAdmin((c) => c.query('SELECT 1'));
    return { url: await freshSchema(schemas) };
  } catch (error) {
    return { why: `${PG_URL} unreachable: ${error instanceof Error ? error.message : String(error)}` };
  }
}

async function throughput(name: WorkloadName, sides: Side[], skipped: BenchRow[] = []): Promise<BenchRow[]> {
  const workload = WORKLOADS[name];
  const work = await countWork(workload);
  // Each side is measured against the bare route in the same rounds; `twin` is the bare
  // route in a second process, the noise floor of the comparison.
  const specs: Record<string, ServerSpec> = { bare: { kind: 'bare' } };
  for (const [i, side] of sides.entries()) specs[`side${i}`] = side.spec;
  const measured = await interleavedRounds(specs, 'bare', { sets: SETS, bodies: workload.bodies });
  const bare = measured.bare!;
  const twin = measured.twin!;
  const rows: BenchRow[] = [
    { name: `${workload.title}: work`, value: work.re2, unit: 'RE2 calls/request', note: workNote(work) },
    {
      name: `${workload.title}: bare Fastify route (baseline), same bodies`,
      value: Math.round(bare.rps),
      unit: 'req/s',
      note: `${SETTING}; p50 ${bare.p50} ms, p99 ${bare.p99} ms; ${bare.cpuPerRequest.toFixed(1)} µs CPU/request; the bare route twice (noise floor): CPU ratio ${twin.cpuRatio.toFixed(2)}, throughput ratio ${twin.rpsRatio.toFixed(2)}`,
    },
  ];
  for (const [i, side] of sides.entries()) {
    const s = measured[`side${i}`]!;
    // The floor holds when the server keeps it both per CPU-second and in requests per second.
    const ratio = Math.min(s.cpuRatio, s.rpsRatio);
    rows.push({
      name: `${workload.title}: evaluation / bare route, ${side.label}`,
      value: ratio,
      unit: 'ratio',
      ...(side.goal ? { goal: side.goal.text, pass: ratio >= side.goal.min } : {}),
      ...(side.headline ? { headline: side.headline } : {}),
      note: `the lower of CPU per request (bare / evaluation) ${s.cpuRatio.toFixed(2)} and throughput ${s.rpsRatio.toFixed(2)}; p50 ${s.p50} ms, p99 ${s.p99} ms; ${sideNote(s)}`,
    });
  }
  return [...rows, ...skipped];
}

const guard = (workload: WorkloadName, extra: Partial<ServerSpec> = {}): ServerSpec => ({ kind: 'guard', workload, observability: false, ...extra });

async function realistic(): Promise<BenchRow[]> {
  const schemas: string[] = [];
  const pg = await pgUrlOrWhyNot(schemas);
  const sides: Side[] = [
    { label: 'observability off', spec: guard('realistic') },
    {
      label: 'observability on (SQLite file)',
      spec: guard('realistic', { observability: true }),
      goal: { text: '>= 0.55', min: 0.55 },
      headline: { measure: 'evaluation throughput, observability on', workload: 'realistic mix (SQL, e-mail, prompts, outputs) vs bare Fastify' },
    },
  ];
  if ('url' in pg) sides.push({ label: 'observability on (PostgreSQL)', spec: guard('realistic', { observability: true, databaseUrl: pg.url }) });
  const skipped: BenchRow[] = 'why' in pg ? [{ name: `${WORKLOADS.realistic.title}: PostgreSQL skipped`, value: 0, unit: '', note: pg.why }] : [];
  try {
    return await throughput('realistic', sides, skipped);
  } finally {
    if (schemas.length > 0) {
      await withAdmin(async (c) => {
        for (const schema of schemas) await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      });
    }
  }
}

const benchmarks: Benchmark[] = [
  {
    name: 'server: evaluation throughput, best case',
    run: () =>
      throughput('best', [
        {
          label: 'observability off',
          spec: guard('best'),
          goal: { text: '>= 0.70', min: 0.7 },
          headline: { measure: 'evaluation throughput, observability off', workload: 'best case (10 of 50 controls in scope) vs bare Fastify' },
        },
      ]),
  },
  { name: 'server: evaluation throughput, realistic', run: realistic },
  { name: 'server: evaluation throughput, worst allowed', run: () => throughput('worst', [{ label: 'observability off', spec: guard('worst') }]) },
];

export const section: BenchSection = {
  name: 'Evaluation throughput',
  chapter: 'Server',
  method: `\`POST /api/v1/evaluation\` against a bare Fastify route that parses the same JSON body and
answers a constant (the baseline), both sent the same bodies, on three workloads
(bench/workloads.ts):

- **best case**: 50 controls, 10 in scope for a \`run_sql\` step whose query holds none of
  their words: the literal prefilter rules all 10 out and no evaluator runs. It measures
  HTTP handling, scope filtering and the prefilter. Observability off.
- **realistic**: six steps in turn: SQL queries (one destructive), an e-mail, a prompt, a
  short model output and a 2 KB one. Observability off; on with a SQLite file (the default
  deployment); on with PostgreSQL when \`GUARD_TEST_PG_URL\` is reachable.
- **worst allowed**: 10 controls in scope, each running to the end of an 8 KB query that
  holds all their words (one matches at the very end). Observability off.

The work a request does (controls in scope, evaluator checks, RE2 calls, matches) is
counted on a separate counting server sent the same steps (bench/work-counter.ts), never
assumed, and given in the \`work\` row.

Every server (the baseline included) and the load generator (autocannon, 10 connections)
run in processes of their own on the same cores, with the logger and flush interval
\`guardctl serve\` uses. Each server is loaded for 4 s before it is measured (V8 optimises
its code under load). **Interleaved rounds** (bench/interleaved.ts): every server process
runs in every round, in an order that rotates, over two sets of fresh processes; background
work is flushed before each CPU reading. A side's ratio is the lower of CPU per request
(bare / evaluation) and throughput (evaluation / bare), medians of the rounds. The bare route
runs twice, in two processes: that pair's ratio is the noise floor of the comparison.

The floors: best case >= 0.70 of bare Fastify; realistic with observability on (SQLite)
>= 0.55.`,
  benchmarks,
};
