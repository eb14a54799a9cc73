/**
 * Paired, interleaved rounds measured as CPU per request of each server process: the
 * method for comparing servers whose difference is a few percent.
 *
 * Throughput of two processes measured one after the other compares two moments of a
 * shared machine as much as two servers. Here every server runs in each round, in an order
 * that rotates from round to round (so none is always first, or always after the same
 * neighbour); each server's CPU time is read from its own process (all its threads) around
 * its measured run, after its background work (event writes, span export) is flushed, so
 * that work is billed to the run that caused it. A server's round ratio is the baseline's
 * CPU per request over its own, in the same round: the share of the baseline's requests it
 * answers per CPU-second. Rounds run in several fresh sets of processes, because two
 * processes of identical code do not run exactly alike; the control pair (`twin`, the
 * baseline's spec in a process of its own) measures what is left, the noise floor, in the
 * same run.
 */
import { median } from './harness.js';
import { EVALUATION_BODY, LOAD, ROUNDS } from './server.js';
import { runLoad } from './load-generator.js';
import { startServerProcess, type ServerProcess, type ServerSpec } from './server-process.js';

export interface InterleavedRun {
  rps: number;
  p50: number;
  p99: number;
  /** µs of the server process's CPU time per request answered. */
  cpuPerRequest: number;
}

export interface InterleavedSide {
  /** Each round's baseline CPU per request over this server's (1 for the baseline itself). */
  cpuRatios: number[];
  /** Each round's rate over the baseline's rate in the same round. */
  rpsRatios: number[];
  /** Medians over every round of every set. */
  cpuRatio: number;
  rpsRatio: number;
  rps: number;
  p50: number;
  p99: number;
  cpuPerRequest: number;
}

export interface InterleavedOptions {
  /** Fresh sets of processes (default 2). */
  sets?: number;
  /** Rounds per set (default ROUNDS.rounds). */
  rounds?: number;
  /** Seconds measured per run (default ROUNDS.seconds). */
  seconds?: number;
  connections?: number;
  body?: string;
  /** Several bodies sent in turn on every connection (a workload's steps); `body` is then unused. */
  bodies?: readonly string[];
  /** Called with each server before its set's processes close (to read its stats). */
  beforeClose?: (name: string, server: ServerProcess) => Promise<void>;
}

/** One measured run with the server's background work flushed before each CPU reading. */
export async function flushedRun(
  server: ServerProcess,
  seconds: number,
  connections: number,
  body: string,
  bodies?: readonly string[],
): Promise<InterleavedRun> {
  let before: number | undefined;
  const read = async () => {
    await server.flush();
    return (await server.stats()).cpuMicros;
  };
  const r = await runLoad({
    url: server.url,
    body,
    bodies,
    connections,
    duration: seconds,
    warmup: ROUNDS.generatorWarmup,
    beforeMeasure: async () => void (before = await read()),
  });
  const after = await read();
  if (before === undefined) throw new Error('the load generator measured without warming up');
  if (r.failed > 0) throw new Error(`${server.url} answered ${r.failed} failed requests`);
  return { rps: r.rps, p50: r.p50, p99: r.p99, cpuPerRequest: (after - before) / r.total };
}

/**
 * Measures every spec against `baseline` (whose name must be a key of `specs`) in
 * interleaved rounds, and adds the control pair `twin` (the baseline's spec again).
 * Returns each side by name, the twin included.
 */
export async function interleavedRounds<Name extends string>(
  specs: Record<Name, ServerSpec>,
  baseline: NoInfer<Name>,
  options: InterleavedOptions = {},
): Promise<Record<Name | 'twin', InterleavedSide>> {
  const all: Record<string, ServerSpec> = { ...specs, twin: specs[baseline] };
  const names = Object.keys(all);
  const { sets = 2, rounds = ROUNDS.rounds, seconds = ROUNDS.seconds, connections = LOAD.connections, body = EVALUATION_BODY, bodies } = options;
  const runs = new Map<string, InterleavedRun[]>(names.map((n) => [n, []]));
  const paired = new Map<string, Array<[InterleavedRun, InterleavedRun]>>(names.map((n) => [n, []]));
  for (let set = 0; set < sets; set++) {
    // Started in an order that rotates with the set, so start order cannot favour a side.
    const order = names.map((_, i) => names[(i + set) % names.length]!);
    const servers = new Map<string, ServerProcess>();
    try {
      for (const name of order) servers.set(name, await startServerProcess(specForSet(all[name]!, set)));
      for (const name of order) await flushedRun(servers.get(name)!, LOAD.warmup, connections, body, bodies);
      for (let round = 0; round < rounds; round++) {
        const results = new Map<string, InterleavedRun>();
        for (let i = 0; i < names.length; i++) {
          const name = names[(i + round + set) % names.length]!;
          results.set(name, await flushedRun(servers.get(name)!, seconds, connections, body, bodies));
        }
        const b = results.get(baseline)!;
        for (const [name, r] of results) {
          runs.get(name)!.push(r);
          paired.get(name)!.push([b, r]);
        }
      }
      if (options.beforeClose) for (const [name, server] of servers) await options.beforeClose(name, server);
    } finally {
      for (const server of servers.values()) await server.close();
    }
  }
  const out = {} as Record<Name | 'twin', InterleavedSide>;
  for (const name of names) {
    const pairs = paired.get(name)!;
    const cpuRatios = pairs.map(([b, r]) => b.cpuPerRequest / r.cpuPerRequest);
    const rpsRatios = pairs.map(([b, r]) => r.rps / b.rps);
    const list = runs.get(name)!;
    out[name as Name | 'twin'] = {
      cpuRatios,
      rpsRatios,
      cpuRatio: median(cpuRatios),
      rpsRatio: median(rpsRatios),
      rps: median(list.map((r) => r.rps)),
      p50: median(list.map((r) => r.p50)),
      p99: median(list.map((r) => r.p99)),
      cpuPerRequest: median(list.map((r) => r.cpuPerRequest)),
    };
  }
  return out;
}

/** A note's summary of a side: both ratios' spreads, rate and CPU per request. */
export function sideNote(side: InterleavedSide): string {
  const spread = (list: number[]) => `${Math.min(...list).toFixed(2)}-${Math.max(...list).toFixed(2)}`;
  return `CPU ratio rounds ${spread(side.cpuRatios)}; throughput ratio ${side.rpsRatio.toFixed(2)} (rounds ${spread(side.rpsRatios)}); ${Math.round(side.rps)} req/s, ${side.cpuPerRequest.toFixed(0)} µs CPU/request`;
}

/**
 * A database that outlives its process (a PostgreSQL schema) is seeded by the first set
 * only: a later set's fresh process finds the controls already there.
 */
function specForSet(spec: ServerSpec, set: number): ServerSpec {
  return set > 0 && spec.databaseUrl?.startsWith('postgres') === true ? { ...spec, seed: false } : spec;
}
