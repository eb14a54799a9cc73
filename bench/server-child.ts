/**
 * One server under test in a process of its own, as in production. Throughput benchmarks
 * used to start the baseline and several guardctl servers in the benchmark's process;
 * they then shared one heap, one garbage collector and one JIT, so each server's code was
 * compiled for the shapes of all of them (slower for every one) and one server's
 * background writes were billed to another's run.
 *
 * Started by bench/server-process.ts with a ServerSpec as JSON in argv[2]; answers
 * requests on the IPC channel (see ChildRequest).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createDefaultRegistry } from '../src/evaluators/registry.js';
import { ControlDataSchema } from '../src/model/index.js';
import type { Observability } from '../src/observability/index.js';
import { assembleServer, type AssembledServer } from '../src/server/assemble.js';
import { loadConfig } from '../src/server/config.js';
import { serverLoggerOptions } from '../src/server/start.js';
import { MemorySessions, type SessionSettings } from '../src/sessions/index.js';
import type { Store } from '../src/store/types.js';
import { seedBenchAgent, startBareBaseline } from './server.js';
import { countingRegistry, countRe2Calls, workCounts } from './work-counter.js';
import { WORKLOADS } from './workloads.js';
import type { ChildRequest, ChildStats, ServerSpec } from './server-process.js';

const spec = JSON.parse(process.argv[2] ?? '{}') as ServerSpec;
if (!process.send) throw new Error('server-child must be started with an IPC channel');

/** One control in scope for bench/server.ts's step, for the light end of the range. */
async function seedOneControl(store: Store): Promise<void> {
  await store.upsertAgent({ agent_name: 'bench-bot' });
  const data = ControlDataSchema.parse({
    scope: { step_types: ['tool'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)\\b(drop|truncate)\\s+table\\b' } },
    action: { decision: 'deny' },
  });
  const control = await store.createControl({ name: 'bench-one', data });
  await store.linkControl('bench-bot', control.control_id);
}

/** A rate control in scope for the benchmark step, counted per agent (bench/budgets.ts). */
async function seedRateControl(store: Store, limit: number): Promise<void> {
  const data = ControlDataSchema.parse({
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
    selector: { path: '*' },
    evaluator: { name: 'rate', config: { limit, window: '1m' } },
    action: { decision: 'deny' },
  });
  const control = await store.createControl({ name: 'bench-rate', data });
  await store.linkControl('bench-bot', control.control_id);
}

/**
 * Two session-aware controls in scope for the benchmark step (bench/sessions.ts): one
 * that would label the session (its pattern never matches the step) and a deny that
 * requires the label; every step reads and counts its session, none adds a label.
 */
async function seedSessionControls(store: Store): Promise<void> {
  const mark = ControlDataSchema.parse({
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)\\bcopy\\b.*\\bprogram\\b' } },
    action: { decision: 'log', session_labels: ['bench_marked'] },
  });
  const deny = ControlDataSchema.parse({
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'], session_labels: ['bench_marked'] },
    selector: { path: 'name' },
    evaluator: { name: 'regex', config: { pattern: '.' } },
    action: { decision: 'deny' },
  });
  for (const [name, data] of [['bench-session-mark', mark], ['bench-session-deny', deny]] as const) {
    const control = await store.createControl({ name, data });
    await store.linkControl('bench-bot', control.control_id);
  }
}

async function counterTotal(observability: Observability, name: string): Promise<number> {
  const { registry, prefix } = observability.metrics;
  const text = await registry.getSingleMetricAsString(`${prefix}_${name}`);
  return [...text.matchAll(/^\S+_total(?:\{[^}]*\})? (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

let app: FastifyInstance;
let url: string;
let observability: Observability | undefined;
let store: Store | undefined;
let server: AssembledServer | undefined;
let dir: string | undefined;
/** The sessions, when they are written by request (`sessionWrites`). */
let sessions: MemorySessions | undefined;

/** Sessions that write their touched rows only when asked (`write-sessions`). */
function sessionsByRequest(opened: Store, settings: SessionSettings): MemorySessions {
  if (opened.sharing.mode === 'shared') throw new Error('sessionWrites: by-request is for a SQLite file');
  sessions = new MemorySessions(settings, opened.sharing.sessionRows, Date.now, 'by-caller');
  return sessions;
}

if (spec.kind === 'bare') {
  const bare = await startBareBaseline();
  app = bare.app;
  url = bare.url;
} else {
  dir = mkdtempSync(join(tmpdir(), 'guard-bench-server-'));
  // The flush interval is the default (10 s), as `guardctl serve` runs: flushes also start
  // whenever the buffer is half full, so heavy load never waits for the timer.
  const config = loadConfig({ ...(spec.observability ? {} : { OBSERVABILITY_ENABLED: 'false' }), ...spec.otel }, {
    databaseUrl: spec.databaseUrl ?? join(dir, 'bench.db'),
    ...(spec.sampleRate !== undefined ? { nonMatchSampleRate: spec.sampleRate } : {}),
  });
  // Assembled as `guardctl serve` assembles it (a SQLite file's events written by a worker
  // thread), with the logger it runs with: what is measured is what users run.
  if (spec.countWork) countRe2Calls();
  server = await assembleServer(config, {
    registry: spec.countWork ? countingRegistry() : createDefaultRegistry(),
    logger: serverLoggerOptions(config),
    observability: spec.observability ? { processMetrics: true } : false,
    ...(spec.sessionWrites === 'by-request' ? { sessions: (opened: Store) => sessionsByRequest(opened, config) } : {}),
  });
  ({ app, store, observability } = server);
  if (spec.seed !== false) {
    if (spec.workload) await seedBenchAgent(store, spec.mode, WORKLOADS[spec.workload].controls());
    else await (spec.controls === 1 ? seedOneControl(store) : seedBenchAgent(store, spec.mode));
    if (spec.rateLimit !== undefined) await seedRateControl(store, spec.rateLimit);
    if (spec.sessions) await seedSessionControls(store);
  }
  url = `${await app.listen({ host: '127.0.0.1', port: 0 })}/api/v1/evaluation`;
  observability?.start();
}
if (spec.keepAliveMs !== undefined) app.server.keepAliveTimeout = spec.keepAliveMs;
let connections = 0;
app.server.on('connection', () => connections++);

async function stats(): Promise<ChildStats> {
  const cpu = process.cpuUsage();
  const drops = server?.tracing?.dropped();
  const out: ChildStats = {
    cpuMicros: cpu.user + cpu.system, written: 0, dropped: 0, rows: 0, connections,
    work: spec.countWork ? { ...workCounts } : null,
    spansDropped: drops ? drops.queue_full + drops.export_failed : 0,
  };
  if (observability && store) {
    out.written = await counterTotal(observability, 'events_written_total');
    out.dropped = await counterTotal(observability, 'events_dropped_total');
    out.rows = (await store.queryEvents({ limit: 1, offset: 0 })).total;
  }
  return out;
}

process.on('message', (request: ChildRequest) => {
  void (async () => {
    switch (request.op) {
      case 'stats':
        process.send!({ id: request.id, stats: await stats() });
        break;
      case 'flush':
        // Spans waiting for export are written too: left queued, a traced server exports
        // them while the next server of the round is measured, and that one pays for them.
        await Promise.all([observability?.flush(), server?.tracing?.forceFlush()]);
        process.send!({ id: request.id });
        break;
      case 'write-sessions':
        sessions?.writeTouched();
        process.send!({ id: request.id });
        break;
      case 'close':
        await (server ? server.close() : app.close());
        if (dir) rmSync(dir, { recursive: true, force: true });
        process.send!({ id: request.id }, () => process.exit(0));
        break;
    }
  })();
});
process.send({ ready: url });
