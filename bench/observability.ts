/**
 * Observability benchmarks (issue #4), all through real HTTP on 127.0.0.1:
 * - ingest: POST /api/v1/observability/events in batches of 1000 until every event is
 *   written to a SQLite file (buffer + flush included), events/s;
 * - evaluation throughput with observability on, as a ratio to bench/server.ts's bare
 *   Fastify baseline (same body, same run, same load generator);
 * - a 24h stats query over 1,000,000 events, ms (median of 5).
 * Non-matches are rolled up per minute (src/observability/non-match-rollups.ts), so
 * "written" counts event rows plus the non-matches the rollups written represent.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createDefaultRegistry } from '../src/evaluators/registry.js';
import type { ObservabilityEvent } from '../src/model/index.js';
import type { Observability } from '../src/observability/index.js';
import { assembleServer } from '../src/server/assemble.js';
import { loadConfig, type ServerConfig } from '../src/server/config.js';
import { serverLoggerOptions } from '../src/server/start.js';
import type { Store } from '../src/store/types.js';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';
import { benchRollups } from './rollups.js';
import { bracketedRatio, EVALUATION_BODY, LOAD, measuredRun, ROUNDS, type RoundResult } from './server.js';
import { startServerProcess, type ServerProcess, type ServerSpec } from './server-process.js';
import { countWork, workNote } from './workload-throughput.js';

interface Server {
  app: FastifyInstance;
  url: string;
  store: Store;
  observability: Observability;
  dir: string;
  close(): Promise<void>;
}

/** A listening server on a SQLite file, assembled as `guardctl serve` assembles it (events written by a worker thread). */
async function startServer(overrides: Partial<ServerConfig> = {}): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'guard-obs-bench-'));
  const config = loadConfig({}, { databaseUrl: join(dir, 'bench.db'), flushIntervalSeconds: 1, ...overrides });
  const server = await assembleServer(config, { registry: createDefaultRegistry(), logger: serverLoggerOptions(config), observability: { processMetrics: true } });
  await server.app.listen({ host: '127.0.0.1', port: 0 });
  server.observability!.start();
  return {
    app: server.app,
    store: server.store,
    observability: server.observability!,
    dir,
    url: `http://127.0.0.1:${(server.app.server.address() as AddressInfo).port}`,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const AGENTS = ['support-bot', 'billing-bot', 'search-bot', 'triage-bot', 'ops-bot'];
const ACTIONS = ['deny', 'steer', 'warn', 'log', 'allow'] as const;

function event(i: number, timestamp: string): ObservabilityEvent {
  return {
    control_execution_id: `bench-${i}`,
    trace_id: `trace-${i >> 4}`,
    span_id: `span-${i}`,
    agent_name: AGENTS[i % AGENTS.length]!,
    control_id: 1 + (i % 20),
    control_name: `control-${1 + (i % 20)}`,
    check_stage: i % 3 === 0 ? 'post' : 'pre',
    applies_to: i % 2 === 0 ? 'tool' : 'llm',
    action: ACTIONS[i % ACTIONS.length]!,
    matched: i % 7 === 0,
    confidence: 1,
    timestamp,
    execution_duration_ms: 0.02 + (i % 10) / 100,
    evaluator_name: 'regex',
    selector_path: 'input.query',
    error_message: i % 101 === 0 ? 'evaluator failed' : null,
    metadata: null,
  };
}

/**
 * Clients send 1000 events per request, 4 requests in flight. When the buffer is full the
 * server accepts the first `enqueued` events of a batch and drops the rest; this client,
 * like a well-behaved one, waits briefly and resends that tail, so the rate measured is
 * what reaches the SQLite file, with the store as the bottleneck.
 */
async function benchIngest(): Promise<BenchRow[]> {
  const batches = 200;
  const inFlight = 4;
  const s = await startServer({ eventBufferSize: 50_000 });
  try {
    const now = new Date().toISOString();
    const batchesOfEvents = Array.from({ length: batches }, (_, b) =>
      Array.from({ length: 1000 }, (_, i) => event(b * 1000 + i, now)),
    );
    let resent = 0;
    const start = performance.now();
    let next = 0;
    const send = async (events: ObservabilityEvent[]): Promise<number> => {
      const res = await fetch(`${s.url}/api/v1/observability/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      return ((await res.json()) as { enqueued: number }).enqueued;
    };
    const worker = async () => {
      while (next < batchesOfEvents.length) {
        let events = batchesOfEvents[next++]!;
        for (;;) {
          const enqueued = await send(events);
          if (enqueued === events.length) break;
          events = events.slice(enqueued);
          resent += events.length;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    await s.observability.flush();
    const seconds = (performance.now() - start) / 1000;
    const stored = await writtenEvents(s);
    const rows = (await s.store.queryEvents({ limit: 1, offset: 0 })).total;
    const rate = stored / seconds;
    return [
      {
        name: 'ingest via POST /observability/events, batches of 1000, into a SQLite file',
        value: Math.round(rate),
        unit: 'events/s',
        goal: '>= 50000 events/s',
        pass: rate >= 50_000,
        note: `${stored} stored (${rows} as rows, the non-matches rolled up) in ${seconds.toFixed(1)} s (writer: ${s.observability.writerKind}); ${resent} resent after a full buffer`,
      },
    ];
  } finally {
    await s.close();
  }
}

/** Events written: rows plus the non-matches represented by the rollups written. */
async function writtenEvents(s: Server): Promise<number> {
  const { registry, prefix } = s.observability.metrics;
  const text = await registry.getSingleMetricAsString(`${prefix}_events_written_total`);
  return Number(/_total (\d+)/.exec(text)?.[1] ?? 0);
}

/** Loads one server (its own process) for `seconds` with bench/server.ts's step (10 of 50 controls in scope). */
const load = (server: ServerProcess, seconds: number): Promise<RoundResult> => measuredRun(server, seconds, { connections: 16 });

/**
 * Each evaluated control is one event: matches and errors are stored as rows, non-matches
 * are counted in per-minute rollups. Measured with bench/server.ts's agent (50 controls,
 * 10 in scope for its step) and with a single control, each against the same server
 * without observability, with every non-match also stored as a row (sample rate 1: the
 * design before rollups) and against bench/server.ts's bare Fastify baseline, in rounds
 * that run the baseline between the servers. Every server runs in a process of its own,
 * as in production (bench/server-child.ts).
 */
async function benchEvaluation(): Promise<BenchRow[]> {
  const all: ServerProcess[] = [];
  const start = async (spec: ServerSpec) => {
    const server = await startServerProcess(spec);
    all.push(server);
    return server;
  };
  try {
    const bare = await start({ kind: 'bare' });
    const scenarios: Array<{ controls: 1 | 10; on: ServerProcess; off: ServerProcess; rows: ServerProcess }> = [];
    for (const controls of [1, 10] as const) {
      scenarios.push({
        controls,
        on: await start({ kind: 'guard', controls, observability: true }),
        off: await start({ kind: 'guard', controls, observability: false }),
        rows: await start({ kind: 'guard', controls, observability: true, sampleRate: 1 }),
      });
    }
    // Each round: the baseline, the servers the goal is about (observability on), the
    // baseline again, the rest; one more baseline run closes the last round. Every server's
    // ratio is against the mean of the baseline runs just before and after it (see
    // bracketedRatio in bench/server.ts), which cancels a steady drift of the machine.
    const goalRuns = scenarios.map((s) => s.on);
    const otherRuns = scenarios.flatMap((s) => [s.off, s.rows]);
    for (const server of [bare, ...goalRuns, ...otherRuns]) await load(server, LOAD.warmup);
    const runs = new Map<ServerProcess, RoundResult[]>([bare, ...goalRuns, ...otherRuns].map((s) => [s, []]));
    const measure = async (server: ServerProcess) => {
      // A row-per-event server may still be writing what the last run queued: let
      // every writer finish first, so no run competes with another's background work.
      await Promise.all(all.map((s) => s.flush()));
      runs.get(server)!.push(await load(server, ROUNDS.seconds));
    };
    for (let round = 0; round < ROUNDS.rounds; round++) {
      await measure(bare);
      for (const server of goalRuns) await measure(server);
      await measure(bare);
      for (const server of otherRuns) await measure(server);
    }
    await measure(bare);
    const rate = (s: ServerProcess) => median(runs.get(s)!.map((r) => r.rps));
    const cpu = (s: ServerProcess) => median(runs.get(s)!.map((r) => r.cpuPerRequest)).toFixed(0);
    const bareRates = runs.get(bare)!.map((r) => r.rps);
    // Baseline runs 2r and 2r+1 bracket round r's goal runs; 2r+1 and 2r+2 the others.
    const ratios = (s: ServerProcess) =>
      runs.get(s)!.map((r, round) => {
        const before = goalRuns.includes(s) ? 2 * round : 2 * round + 1;
        return bracketedRatio(r.rps, bareRates[before]!, bareRates[before + 1]!);
      });
    const rows: BenchRow[] = [
      { name: 'bare Fastify route, bench/server.ts baseline', value: Math.round(rate(bare)), unit: 'req/s', note: `${cpu(bare)} µs CPU/request` },
    ];
    for (const { controls, on, off, rows: everyRow } of scenarios) {
      // The best-case step (bench/workloads.ts): counted on a server of its own, after the timed runs.
      const work = workNote(await countWork({ name: 'best', bodies: [EVALUATION_BODY] }, { workload: undefined, controls }));
      const onRatios = ratios(on);
      const onRatio = median(onRatios);
      await on.flush();
      await everyRow.flush();
      const onStats = await on.stats();
      const rowStats = await everyRow.stats();
      rows.push(
        {
          name: `evaluation, ${controls} control(s) in scope, no observability`,
          value: Math.round(rate(off)),
          unit: 'req/s',
          note: `${median(ratios(off)).toFixed(2)} of bare: the server's own ceiling; ${cpu(off)} µs CPU/request`,
        },
        {
          name: `evaluation, ${controls} control(s) in scope, observability on`,
          value: Math.round(rate(on)),
          unit: 'req/s',
          note: `${(rate(on) / rate(off)).toFixed(2)} of the same server without observability; ${cpu(on)} µs CPU/request; ${onStats.written} events written (${onStats.rows} as rows), ${onStats.dropped} dropped`,
        },
        {
          name: `evaluation, ${controls} control(s) in scope, observability on, every non-match also a row (sample rate 1)`,
          value: Math.round(rate(everyRow)),
          unit: 'req/s',
          note: `${median(ratios(everyRow)).toFixed(2)} of bare: the cost of one row per evaluated control; ${cpu(everyRow)} µs CPU/request; ${rowStats.dropped} dropped`,
        },
        {
          name: `best case: evaluation with observability / bare Fastify, ${controls} control(s) in scope`,
          value: onRatio,
          unit: 'x',
          // The >= 0.60 goal is the realistic workload's (bench/workload-throughput.ts).
          note: `${work}; median of rounds: ${onRatios.map((r) => r.toFixed(2)).join(', ')}`,
        },
      );
    }
    return rows;
  } finally {
    for (const server of all) await server.close();
  }
}

async function benchStats(): Promise<BenchRow[]> {
  const s = await startServer();
  try {
    const total = 1_000_000;
    const now = Date.now();
    // Spread over the last 48 hours so the 24h window holds about half of them. As the
    // server stores them: matches and errors (~15% here) as rows, non-matches as rollups.
    const span = 48 * 3_600_000;
    const batch: ObservabilityEvent[] = [];
    const rollups = benchRollups(s.store);
    let rows = 0;
    for (let i = 0; i < total; i++) {
      const e = event(i, new Date(now - Math.floor((i / total) * span)).toISOString());
      if (e.matched || e.error_message !== null) {
        batch.push(e);
        rows++;
      } else rollups.add(e);
      if (batch.length === 1000) {
        await s.store.insertEvents(batch);
        batch.length = 0;
      }
    }
    await s.store.insertEvents(batch);
    const mix = `${rows} rows + ${await rollups.finish()} rollup rows`;
    const time = async (path: string) => {
      const runs: number[] = [];
      let executions = 0;
      for (let r = 0; r < 5; r++) {
        const start = performance.now();
        const res = await fetch(`${s.url}${path}`);
        const body = (await res.json()) as { totals: { executions: number } };
        runs.push(performance.now() - start);
        executions = body.totals.executions;
      }
      return { ms: median(runs), executions };
    };
    const all = await time('/api/v1/observability/stats?time_range=24h');
    const agent = await time('/api/v1/observability/stats?time_range=24h&agent_name=support-bot');
    return [
      {
        name: 'GET /observability/stats 24h over 1,000,000 events (20 controls)',
        value: all.ms,
        unit: 'ms',
        goal: '< 200 ms',
        pass: all.ms < 200,
        note: `${all.executions} executions in window; stored as ${mix}`,
      },
      {
        name: 'same, one agent',
        value: agent.ms,
        unit: 'ms',
        goal: '< 200 ms',
        pass: agent.ms < 200,
        note: `${agent.executions} executions in window`,
      },
    ];
  } finally {
    await s.close();
  }
}

const benchmarks: Benchmark[] = [
  { name: 'observability ingest', run: benchIngest },
  { name: 'observability evaluation overhead', run: benchEvaluation },
  { name: 'observability stats', run: benchStats },
];

export const section: BenchSection = {
  name: 'Observability',
  chapter: 'Observability and storage',
  method: `All through real HTTP on 127.0.0.1, SQLite file.

- **Ingest**: \`POST /api/v1/observability/events\` in batches of 1,000 until every event is
  written (buffer and flush included). Non-matches are rolled up per minute, so "written"
  counts event rows plus the non-matches the rollups represent.
- **Evaluation overhead**: the best-case step with 1 and with 10 controls in scope, without
  observability, with it, and with every non-match also a row (sample rate 1), against the
  bare Fastify baseline, in paired rounds as in "Evaluation throughput". Every writer is
  drained before each run.
- **Stats**: \`GET /observability/stats?time_range=24h\` over 1,000,000 events stored as the
  server stores them (matches and errors as rows, non-matches as per-minute rollups),
  median of 5.`,
  benchmarks,
};
