/**
 * Instructions per evaluation request, counted by callgrind (valgrind): a count that moves
 * by a few percent from run to run, where throughput on a shared machine moves by tens.
 * `npm run bench:instructions [-- <warm> <measured> [workload...]]` (30,000 and 3,000 by
 * default); needs valgrind on the PATH.
 *
 * Each benchmark server (bench/server-child.ts), per workload of bench/workloads.ts (the
 * bare baseline sent that workload's bodies, then guardctl, with observability off and on;
 * for the best case also its 10 controls in shadow mode), runs under callgrind with counting
 * off. This process sends the warm-up requests, then counts the measured ones over the
 * same keep-alive connections: a new client's connections make V8 re-optimise parts of
 * Node's HTTP code for a while, which would be counted as the server's work. V8's hash and
 * random seeds are fixed and its background threads off. Three windows of `measured`
 * requests are counted one after the other and the median reported: where the garbage
 * collector's major cycles fall moves a single window's count by up to a quarter. Figures
 * are instructions in user space, compilation and collection included.
 *
 * The workload name `tracing` counts bench/otel.ts's three servers (best case, observability
 * on; tracing off, every span sampled, `traceidratio` at 0.01) exporting to a local OTLP
 * receiver: what tracing costs, with the machine's load taken out. `sessions` counts
 * bench/sessions.ts's SQLite pair (the best case with and without two session-aware
 * controls, the step sent in 64 sessions), `sessions-pg` its PostgreSQL pair (each server
 * on a fresh schema; the database's own work is not counted).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { median } from './harness.js';
import { startReceiver } from './otel.js';
import { dropSchemas, freshSchema } from './pg-schemas.js';
import { SESSION_BODIES } from './sessions.js';
import type { ChildRequest, ServerSpec } from './server-process.js';
import { WORKLOADS, type WorkloadName } from './workloads.js';

const run = promisify(execFile);
const CONNECTIONS = 10;

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

/** Starts a benchmark server under callgrind, counting off; resolves with its URL. */
function startUnderCallgrind(spec: ServerSpec, outDir: string): Promise<{ child: ChildProcess; url: string }> {
  const script = fileURLToPath(new URL('./server-child.js', import.meta.url));
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${join(outDir, 'callgrind.%p')}`,
      process.execPath,
      '--single-threaded',
      '--hash-seed=1',
      '--random-seed=1',
      script,
      JSON.stringify(spec),
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
  );
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'ENOENT' ? new Error('valgrind is not on the PATH: install it (Debian: apt install valgrind)') : err),
    );
    child.once('exit', (code) => reject(new Error(`server under callgrind exited with ${code}: ${log.slice(-2000)}`)));
    child.on('message', (message: { ready?: string }) => {
      if (message.ready) resolve({ child, url: message.ready });
    });
  });
}

/** Sends `count` evaluation requests over `agent`'s connections, CONNECTIONS at a time, the bodies in turn. */
async function send(url: URL, agent: http.Agent, count: number, bodies: readonly string[]): Promise<void> {
  let left = count;
  let next = 0;
  const one = (body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          if (res.statusCode !== 200) reject(new Error(`${url.href} answered ${res.statusCode}`));
          res.resume();
          res.on('end', resolve);
        },
      );
      req.once('error', reject);
      req.end(body);
    });
  const loop = async () => {
    while (left > 0) {
      left--;
      await one(bodies[next++ % bodies.length]!);
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, loop));
}

/** Asks the benchmark server to write what observability holds; resolves when it is written. */
function flush(child: ChildProcess): Promise<void> {
  const id = Date.now();
  return new Promise((resolve) => {
    const onMessage = (message: { id?: number }) => {
      if (message.id !== id) return;
      child.off('message', onMessage);
      resolve();
    };
    child.on('message', onMessage);
    child.send({ id, op: 'flush' } satisfies ChildRequest);
  });
}

/**
 * Windows counted per server. A major cycle of the garbage collector comes every few
 * thousand requests and moves one window's count by up to a quarter: the median of three
 * windows reads the common case, and the three counts show the spread.
 */
const WINDOWS = 3;

/** Instructions per measured request of one server, in each of WINDOWS windows. */
async function count(spec: ServerSpec, bodies: readonly string[], warm: number, measured: number): Promise<number[]> {
  const outDir = mkdtempSync(join(tmpdir(), 'guard-callgrind-'));
  const { child, url } = await startUnderCallgrind(spec, outDir);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  try {
    const target = new URL(url);
    await send(target, agent, warm, bodies);
    const pid = String(child.pid);
    for (let w = 0; w < WINDOWS; w++) {
      // With observability on, events wait in a buffer for the flush timer: written inside
      // the counted window they would be the warm-up's, and some counted requests' would be
      // written after it. Flushing on both edges counts exactly the measured requests' writes.
      if (spec.observability) await flush(child);
      await run('callgrind_control', ['--instr=on', pid]);
      await send(target, agent, measured, bodies);
      if (spec.observability) await flush(child);
      await run('callgrind_control', ['--instr=off', pid]);
      // Each dump holds what was counted since the one before: this window alone.
      await run('callgrind_control', ['--dump', pid]);
    }
    const dumps = readdirSync(outDir)
      // callgrind.<pid>.<n>: the n-th dump (callgrind.<pid> itself is the file it opened at start).
      .map((f) => /^callgrind\.\d+\.(\d+)$/.exec(f))
      .filter((m): m is RegExpExecArray => m !== null)
      .sort((a, b) => Number(a[1]) - Number(b[1]));
    if (dumps.length !== WINDOWS) throw new Error(`callgrind wrote ${dumps.length} dumps, not ${WINDOWS}`);
    return dumps.map((m) => {
      const totals = /^totals: (\d+)$/m.exec(readFileSync(join(outDir, m.input), 'utf8'));
      if (!totals) throw new Error(`no totals in the callgrind dump ${m.input}`);
      return Number(totals[1]) / measured;
    });
  } finally {
    agent.destroy();
    child.removeAllListeners('exit');
    // callgrind writes its last dump as the process ends: the folder is removed after that.
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill();
    await exited;
    // GUARD_CALLGRIND_KEEP: leave the dumps for callgrind_annotate (profiling by hand).
    if (process.env.GUARD_CALLGRIND_KEEP) process.stderr.write(`callgrind dumps kept in ${outDir}\n`);
    else rmSync(outDir, { recursive: true, force: true });
  }
}

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
    process.stderr.write(`counting ${title}: ${label} (${warm} requests to warm up, then ${WINDOWS} windows of ${measured} counted)...\n`);
    const traced = spec.otel && receiver ? { ...spec, otel: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...spec.otel } } : spec;
    const schemas: string[] = [];
    let windows: number[];
    try {
      windows = await count(entry.postgres ? { ...traced, databaseUrl: await freshSchema(schemas, 'guard_bench_instr') } : traced, bodies, warm, measured);
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
