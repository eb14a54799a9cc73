/**
 * Change safety (issue #22):
 * - POST /api/v1/evaluation throughput with the 10 in-scope benchmark controls in shadow
 *   mode, as a ratio to the same server with the same 10 enforced; observability on in
 *   both (shadow mode reports through events), each server in its own process, paired
 *   rounds as in bench/server.ts. The benchmark step matches none of them (the common
 *   case); a second pair sends a step that one of them matches (a steer), for information;
 * - GitOps apply of 1,000 controls and 100 agents into an empty server with history (one
 *   entry per write, in the write's transaction) as a ratio to the same apply without it,
 *   alternated in the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GuardClient } from '../src/client/index.js';
import { createDefaultRegistry } from '../src/evaluators/registry.js';
import { loadDirectory } from '../src/gitops/directory.js';
import { applyToServer, planAgainstServer } from '../src/gitops/sync.js';
import { assembleServer } from '../src/server/assemble.js';
import { loadConfig } from '../src/server/config.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import { writeGeneratedDirectory } from './gitops.js';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';
import { EVALUATION_BODY, LOAD, pairedRounds, ROUNDS } from './server.js';
import { startServerProcess } from './server-process.js';

/** The benchmark step with a query that bench-0's pattern matches (a steer control). */
const MATCHING_BODY = EVALUATION_BODY.replace('SELECT id, email FROM customers', 'ALTER TABLE t0 ADD email; SELECT id, email FROM customers');

async function pair(body: string): Promise<{ ratio: number; ratios: number[]; enforced: number; shadow: number }> {
  const enforced = await startServerProcess({ kind: 'guard', controls: 10, observability: true });
  const shadow = await startServerProcess({ kind: 'guard', controls: 10, observability: true, mode: 'shadow' });
  try {
    const { bare, real, ratios } = await pairedRounds(enforced, shadow, {}, body);
    return { ratio: median(ratios), ratios, enforced: bare.rps, shadow: real.rps };
  } finally {
    await shadow.close();
    await enforced.close();
  }
}

async function throughput(): Promise<BenchRow[]> {
  if (MATCHING_BODY === EVALUATION_BODY) throw new Error('the matching step did not change the benchmark step');
  const quiet = await pair(EVALUATION_BODY);
  const matching = await pair(MATCHING_BODY);
  const setting = `observability on, ${LOAD.connections} connections, ${ROUNDS.rounds} rounds of ${ROUNDS.seconds} s between two runs of the enforced server, medians`;
  return [
    { name: 'evaluation, 10 controls enforced (baseline)', value: Math.round(quiet.enforced), unit: 'req/s', note: setting },
    { name: 'evaluation, the same 10 in shadow mode', value: Math.round(quiet.shadow), unit: 'req/s', note: setting },
    {
      name: 'shadow / enforced throughput',
      value: quiet.ratio,
      unit: 'ratio',
      goal: '>= 0.95',
      pass: quiet.ratio >= 0.95,
      note: `the best-case step (bench/workloads.ts): none of them matches, none reaches an evaluator; rounds: ${quiet.ratios.map((r) => r.toFixed(2)).join(', ')}`,
    },
    {
      name: 'shadow / enforced throughput, a step one of them matches',
      value: matching.ratio,
      unit: 'ratio',
      note: `enforced answers steer, shadow answers allow with a shadow match stored as an event (one example per control and minute); rounds: ${matching.ratios.map((r) => r.toFixed(2)).join(', ')}`,
    },
  ];
}

/** Seconds to plan and apply the generated directory into an empty in-process server. */
async function applySeconds(dir: string, history: boolean): Promise<number> {
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', OBSERVABILITY_ENABLED: 'false' });
  const server = await assembleServer(config, { store: new SqliteStore(':memory:', { history }), registry: createDefaultRegistry(), observability: false });
  try {
    const url = await server.app.listen({ host: '127.0.0.1', port: 0 });
    const client = new GuardClient({ serverUrl: url, timeoutMs: 60_000 });
    const t0 = performance.now();
    const loaded = await loadDirectory(dir, createDefaultRegistry());
    const applied = await applyToServer(client, await planAgainstServer(client, loaded, {}));
    const seconds = (performance.now() - t0) / 1000;
    if (applied.failed) throw new Error(`apply failed: ${applied.failed.error}`);
    const entries = (await server.store.auditLog({ limit: 1 })).entries.length;
    if ((entries > 0) !== history) throw new Error(`history ${history ? 'missing' : 'written'} in the ${history ? 'history' : 'baseline'} run`);
    return seconds;
  } finally {
    await server.close();
  }
}

const APPLY_ROUNDS = 5;

async function applyWithHistory(): Promise<BenchRow[]> {
  const root = mkdtempSync(join(tmpdir(), 'guardctl-bench-history-'));
  try {
    const dir = join(root, 'controls');
    writeGeneratedDirectory(dir);
    // One warm-up of each, then alternating rounds; each round's ratio is against the
    // mean of the baseline runs around it (the machine's speed drifts between runs).
    await applySeconds(dir, false);
    await applySeconds(dir, true);
    const without = [await applySeconds(dir, false)];
    const withHistory: number[] = [];
    for (let i = 0; i < APPLY_ROUNDS; i++) {
      withHistory.push(await applySeconds(dir, true));
      without.push(await applySeconds(dir, false));
    }
    const ratios = withHistory.map((t, i) => t / ((without[i]! + without[i + 1]!) / 2));
    const ratio = median(ratios);
    return [
      { name: 'apply 1,000 controls, 100 agents, without history (baseline)', value: median(without), unit: 's', note: `median of ${without.length} runs` },
      { name: 'apply 1,000 controls, 100 agents, with history', value: median(withHistory), unit: 's', note: `median of ${withHistory.length} runs, 2,100 entries each` },
      {
        name: 'apply with history / without',
        value: ratio,
        unit: 'ratio',
        goal: '<= 1.3',
        pass: ratio <= 1.3,
        note: `rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')}`,
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const benchmarks: Benchmark[] = [
  { name: 'shadow: evaluation throughput', run: throughput },
  { name: 'shadow: apply with history', run: applyWithHistory },
];

export const section: BenchSection = {
  name: 'Shadow mode',
  chapter: 'Server',
  method: `- **Throughput**: the 10 in-scope best-case controls in shadow mode, against the same 10
  enforced (the baseline); observability on in both (shadow mode reports through events),
  each server in its own process, paired rounds over fresh pairs of processes. The step
  matches none of them (the common case); a second pair sends a step one of them matches
  (enforced: a steer; shadow: an allow with one shadow match), for information.
- **Apply with history**: a GitOps apply of 1,000 controls and 100 agents into an empty
  server with history (one entry per write, in the write's transaction), against the same
  apply without history (the baseline), alternated in the same run.`,
  benchmarks,
};
