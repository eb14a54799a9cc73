/**
 * What OpenTelemetry tracing costs an evaluation (docs/observability.md, "Tracing"): the
 * same server (bench/server.ts's agent, 10 of 50 controls in scope, observability on) with
 * tracing off, with every span sampled and exported to a local OTLP/HTTP receiver, and
 * with `traceidratio` at 0.01, each in a process of its own and measured in rounds that
 * run the untraced server before and after the traced ones; each ratio is against the mean
 * of the two untraced runs around it (bracketedRatio), the median of ROUNDS rounds.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';
import { EVALUATE_SPAN } from '../src/tracing/evaluation-span.js';
import { bracketedRatio, LOAD, measuredRun, ROUNDS, type RoundResult } from './server.js';
import { startServerProcess, type ServerProcess, type ServerSpec } from './server-process.js';

/**
 * A local collector that takes OTLP/HTTP (protobuf, guardctl's default, or JSON) and
 * answers at once. It counts spans by their name in the body rather than decoding it (the
 * name is the same bytes in both encodings): the receiver's CPU is not what is measured.
 */
async function startReceiver(): Promise<{ url: string; spans(): number; close(): Promise<void> }> {
  let spans = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('latin1');
      for (let at = body.indexOf(EVALUATE_SPAN); at >= 0; at = body.indexOf(EVALUATE_SPAN, at + EVALUATE_SPAN.length)) spans++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans: () => spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const load = (server: ServerProcess, seconds: number): Promise<RoundResult> => measuredRun(server, seconds, { connections: 16 });

async function benchTracing(): Promise<BenchRow[]> {
  const receiver = await startReceiver();
  const all: ServerProcess[] = [];
  const start = async (spec: ServerSpec) => {
    const server = await startServerProcess(spec);
    all.push(server);
    return server;
  };
  try {
    const base = { kind: 'guard', controls: 10, observability: true } as const;
    const off = await start(base);
    const sampled = await start({ ...base, otel: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'always_on' } });
    const ratio = await start({ ...base, otel: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.01' } });
    const traced = [sampled, ratio];
    for (const server of [off, ...traced]) await load(server, LOAD.warmup);
    const runs = new Map<ServerProcess, RoundResult[]>([off, ...traced].map((s) => [s, []]));
    const measure = async (server: ServerProcess) => {
      await Promise.all(all.map((s) => s.flush()));
      runs.get(server)!.push(await load(server, ROUNDS.seconds));
    };
    for (let round = 0; round < ROUNDS.rounds; round++) {
      await measure(off);
      for (const server of traced) await measure(server);
    }
    await measure(off);
    const offRates = runs.get(off)!.map((r) => r.rps);
    const ratios = (s: ServerProcess) => runs.get(s)!.map((r, round) => bracketedRatio(r.rps, offRates[round]!, offRates[round + 1]!));
    const cpu = (s: ServerProcess) => median(runs.get(s)!.map((r) => r.cpuPerRequest)).toFixed(0);
    const rate = (s: ServerProcess) => Math.round(median(runs.get(s)!.map((r) => r.rps)));
    const sampledStats = await sampled.stats();
    const ratioStats = await ratio.stats();
    const sampledRatios = ratios(sampled);
    const ratioRatios = ratios(ratio);
    return [
      { name: 'evaluation, 10 controls, observability on, tracing off', value: rate(off), unit: 'req/s', note: `${cpu(off)} µs CPU/request` },
      {
        name: 'tracing on, every span sampled and exported / tracing off',
        value: median(sampledRatios),
        unit: 'x',
        goal: '>= 0.8',
        pass: median(sampledRatios) >= 0.8,
        note: `rounds: ${sampledRatios.map((r) => r.toFixed(2)).join(', ')}; ${rate(sampled)} req/s, ${cpu(sampled)} µs CPU/request; spans dropped: ${sampledStats.spansDropped}; spans received (all runs): ${receiver.spans()}`,
      },
      {
        name: 'tracing on, traceidratio 0.01 / tracing off',
        value: median(ratioRatios),
        unit: 'x',
        goal: '>= 0.97',
        pass: median(ratioRatios) >= 0.97,
        note: `rounds: ${ratioRatios.map((r) => r.toFixed(2)).join(', ')}; ${rate(ratio)} req/s, ${cpu(ratio)} µs CPU/request; spans dropped: ${ratioStats.spansDropped}`,
      },
    ];
  } finally {
    for (const server of all) await server.close();
    await receiver.close();
  }
}

const benchmarks: Benchmark[] = [{ name: 'otel tracing overhead', run: benchTracing }];

export const section: BenchSection = {
  name: 'OpenTelemetry tracing',
  chapter: 'Observability and storage',
  method: `The best-case server (10 of 50 controls in scope, observability on) with tracing off (the
baseline), with every span sampled and exported to a local OTLP/HTTP receiver, and with
\`traceidratio\` at 0.01, each in a process of its own, measured in rounds that run the
untraced server before and after the traced ones; each ratio is against the mean of the two
untraced runs around it, the median of the rounds.`,
  benchmarks,
};
