/**
 * Rate and budget controls (issue #23):
 * - POST /api/v1/evaluation throughput with one `rate` control in scope (a limit the run
 *   never reaches, so every step is counted and allowed) against the same 10 benchmark
 *   controls without it, each server in its own process, paired rounds as in
 *   bench/server.ts over PROCESS_PAIRS fresh pairs of processes (pairedAcrossProcesses); on SQLite (counted in memory) and on PostgreSQL (exact: the steps of
 *   the key are counted from room leased to the server under the limit, one
 *   `counter_take_leased` statement per lease, see counting/leased-counts.ts);
 * - exactness: two server processes on one PostgreSQL schema, 3 x limit concurrent steps of
 *   one key split between them; the run reports how many were allowed against the limit.
 */
import { dropSchemas, freshSchema, PG_URL, pgReachable } from './pg-schemas.js';
import type { Benchmark, BenchRow, BenchSection } from './harness.js';
import { EVALUATION_BODY, LOAD, pairedAcrossProcesses, PROCESS_PAIRS, ROUNDS, type AcrossProcesses } from './server.js';
import { startServerProcess } from './server-process.js';

/** Never reached within a run: every step is counted, none refused. */
const UNREACHED = 1_000_000_000;


const setting = `${LOAD.connections} connections; in each of ${PROCESS_PAIRS} pairs of fresh processes, ${ROUNDS.rounds} rounds of ${ROUNDS.seconds} s between two runs of the set without it; medians`;

function rows(where: string, goal: number, r: AcrossProcesses): BenchRow[] {
  return [
    { name: `${where}: evaluation, 10 controls in scope (baseline)`, value: Math.round(r.baseRps), unit: 'req/s', note: setting },
    { name: `${where}: evaluation, the same plus one rate control`, value: Math.round(r.serverRps), unit: 'req/s', note: setting },
    {
      name: `${where}: with rate / without`,
      value: r.ratio,
      unit: 'ratio',
      goal: `>= ${goal}`,
      pass: r.ratio >= goal,
      note: `median over ${PROCESS_PAIRS} pairs of processes; each pair's median: ${r.pairRatios.map((x) => x.toFixed(2)).join(', ')} (the noise floor: 'server: the same server twice')`,
    },
  ];
}

async function sqliteThroughput(): Promise<BenchRow[]> {
  const r = await pairedAcrossProcesses(() => ({ kind: 'guard', controls: 10 }), () => ({ kind: 'guard', controls: 10, rateLimit: UNREACHED }));
  return rows('SQLite', 0.9, r);
}


async function postgresThroughput(): Promise<BenchRow[]> {
  if (!(await pgReachable())) return [{ name: 'PostgreSQL: rate control throughput', value: 0, unit: '', note: `skipped: ${PG_URL} unreachable` }];
  const schemas: string[] = [];
  try {
    const r = await pairedAcrossProcesses(
      async () => ({ kind: 'guard', controls: 10, databaseUrl: await freshSchema(schemas) }),
      async () => ({ kind: 'guard', controls: 10, rateLimit: UNREACHED, databaseUrl: await freshSchema(schemas) }),
    );
    return rows('PostgreSQL exact', 0.6, r);
  } finally {
    await dropSchemas(schemas);
  }
}

async function exactness(): Promise<BenchRow[]> {
  if (!(await pgReachable())) return [{ name: 'PostgreSQL: exactness', value: 0, unit: '', note: `skipped: ${PG_URL} unreachable` }];
  const schemas: string[] = [];
  const limit = 200;
  const url = await freshSchema(schemas);
  const a = await startServerProcess({ kind: 'guard', controls: 1, rateLimit: limit, databaseUrl: url });
  const b = await startServerProcess({ kind: 'guard', controls: 1, databaseUrl: url, seed: false });
  try {
    const decide = async (target: string) => {
      const res = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: EVALUATION_BODY });
      return ((await res.json()) as { decision: string }).decision;
    };
    const decisions = await Promise.all(Array.from({ length: 3 * limit }, (_, i) => decide(i % 2 ? a.url : b.url)));
    const allowed = decisions.filter((d) => d === 'allow').length;
    return [
      {
        name: 'PostgreSQL exact: steps allowed / limit, two processes, 3 x limit concurrent steps of one key',
        value: allowed / limit,
        unit: 'ratio',
        goal: '= 1',
        pass: allowed === limit,
        note: `${allowed} of ${3 * limit} allowed, limit ${limit}`,
      },
    ];
  } finally {
    await b.close();
    await a.close();
    await dropSchemas(schemas);
  }
}

const benchmarks: Benchmark[] = [
  { name: 'budgets: SQLite rate control throughput', run: sqliteThroughput },
  { name: 'budgets: PostgreSQL rate control throughput', run: postgresThroughput },
  { name: 'budgets: PostgreSQL exactness', run: exactness },
];

export const section: BenchSection = {
  name: 'Rate controls',
  chapter: 'Server',
  method: `Evaluation throughput with one \`rate\` control in scope (a limit the run never reaches, so
every step is counted and allowed) against the same 10 best-case controls without it
(the baseline). Each server runs in its own process; the two are compared in paired
rounds over several fresh pairs of processes started in both orders (see the noise floor
above), and the median over pairs is reported. On SQLite the steps are counted in memory;
on PostgreSQL with \`consistency: exact\` they are counted from room leased to the server
under the limit.

Exactness: two server processes on one PostgreSQL schema receive 3 x limit concurrent
steps of one key between them; the run reports how many were allowed against the limit.`,
  benchmarks,
};
