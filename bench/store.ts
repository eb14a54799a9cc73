/**
 * Store benchmarks: event ingest and the stats query over 1,000,000 events in a 24h
 * window, on SQLite and (when reachable) PostgreSQL. The 1M events are stored the way
 * the server stores them: matches and errors (10%) as rows, non-matches (90%) as
 * per-minute rollups. Baselines are measured in the same run: a bare better-sqlite3
 * insert into an unindexed table, and a bare count of the window's rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { ObservabilityEvent } from '../src/model/index.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.js';
import type { Store } from '../src/store/types.js';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';
import { benchRollups } from './rollups.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const STATS_EVENTS = 1_000_000;
const BATCH = 1000;
const ACTIONS = ['allow', 'deny', 'steer', 'warn', 'log'] as const;
const PG_URL = process.env.GUARD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Events spread evenly over the last 24h: 50 controls, 10 agents, 1% errors. */
function batchOf(start: number, size: number, now: number, total: number): ObservabilityEvent[] {
  const events: ObservabilityEvent[] = [];
  for (let i = start; i < start + size; i++) {
    const control = (i % 50) + 1;
    events.push({
      control_execution_id: `ce-${i}`,
      trace_id: `trace-${i >> 3}`,
      span_id: `span-${i}`,
      agent_name: `agent-${i % 10}`,
      control_id: control,
      control_name: `control-${control}`,
      check_stage: i % 2 ? 'pre' : 'post',
      applies_to: 'tool',
      action: ACTIONS[i % 5]!,
      matched: i % 3 === 0,
      confidence: 1,
      timestamp: new Date(now - Math.floor(((i + 0.5) / total) * (DAY_MS - 60_000))).toISOString(),
      execution_duration_ms: 0.1 + (i % 7) * 0.05,
      evaluator_name: 'regex',
      selector_path: 'input.query',
      error_message: i % 100 === 0 ? 'evaluator failed' : null,
      metadata: i % 10 === 0 ? { note: 'sampled' } : null,
    });
  }
  return events;
}

async function fill(store: Store, total: number, batch: number, now: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < total; i += batch) await store.insertEvents(batchOf(i, Math.min(batch, total - i), now, total));
  return total / ((performance.now() - started) / 1000);
}

/**
 * The 1M-event stats data set as the server keeps it: every 10th event matches (1 in 100
 * is an error) and is a row; the rest are non-matches summed per minute and key. Returns
 * the rows and rollup rows stored.
 */
async function fillMixed(store: Store, total: number, batch: number, now: number): Promise<{ rows: number; rollups: number }> {
  const rollups = benchRollups(store);
  let rows = 0;
  for (let start = 0; start < total; start += batch) {
    const events = batchOf(start, Math.min(batch, total - start), now, total).map((e, k) => ({
      ...e,
      matched: (start + k) % 10 === 0,
    }));
    const kept = events.filter((e) => e.matched || e.error_message !== null);
    rows += kept.length;
    await store.insertEvents(kept);
    for (const e of events) if (!e.matched && e.error_message === null) rollups.add(e);
  }
  return { rows, rollups: await rollups.finish() };
}

async function timeMs(fn: () => Promise<unknown>, runs = 5): Promise<number> {
  await fn(); // warm caches, as a running server would have them
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return median(times);
}

/** A bare better-sqlite3 loop into a table without indexes: the most SQLite can ingest here. */
function bareSqliteIngest(dir: string, events: ObservabilityEvent[], batches: number): number {
  const db = new Database(join(dir, 'bare.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE e (a TEXT, b TEXT, c TEXT, d TEXT, e INTEGER, f TEXT, g TEXT, h TEXT, i TEXT, j INTEGER,
    k INTEGER, l REAL, m INTEGER, n REAL, o TEXT, p TEXT, q TEXT, r TEXT)`);
  const insert = db.prepare('INSERT INTO e VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
  const run = db.transaction((batch: ObservabilityEvent[]) => {
    for (const x of batch) {
      insert.run(x.control_execution_id, x.trace_id, x.span_id, x.agent_name, x.control_id, x.control_name,
        x.check_stage, x.applies_to, x.action, x.matched ? 1 : 0, 0, x.confidence, Date.parse(x.timestamp),
        x.execution_duration_ms, x.evaluator_name, x.selector_path, x.error_message,
        x.metadata === null ? null : JSON.stringify(x.metadata));
    }
  });
  const started = performance.now();
  for (let b = 0; b < batches; b++) run(events);
  const rate = (events.length * batches) / ((performance.now() - started) / 1000);
  db.close();
  return rate;
}

async function sqliteBench(): Promise<BenchRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'guardctl-bench-'));
  try {
    const now = Date.now();
    const sample = batchOf(0, BATCH, now, STATS_EVENTS);
    const bare = bareSqliteIngest(dir, sample, 100);

    const file = join(dir, 'store.db');
    const store = new SqliteStore(file);
    // Ingest measured into a table that already holds the 1M events, as in a running server.
    const mix = await fillMixed(store, STATS_EVENTS, BATCH, now);
    const started = performance.now();
    for (let b = 0; b < 100; b++) await store.insertEvents(batchOf(STATS_EVENTS + b * BATCH, BATCH, now, STATS_EVENTS));
    const ingest = (100 * BATCH) / ((performance.now() - started) / 1000);
    await store.pruneEvents(new Date(now - DAY_MS).toISOString());

    const since = new Date(now - DAY_MS).toISOString();
    const raw = new Database(file, { readonly: true });
    const countWindow = raw.prepare('SELECT count(*) FROM events WHERE ts >= ?').pluck();
    const baseline = await timeMs(async () => countWindow.get(Date.parse(since)));
    raw.close();
    const all = await timeMs(() => store.controlStats({ since }));
    const inWindow = (await store.controlStats({ since })).reduce((n, r) => n + r.executions, 0);
    const agent = await timeMs(() => store.controlStats({ since, agent_name: 'agent-3' }));
    const one = await timeMs(() => store.controlStats({ since, control_id: 7 }));
    await store.close();
    return [
      {
        name: 'sqlite: insertEvents, batches of 1000 (table holds the 1M-event mix: 100k rows + rollups)',
        value: Math.round(ingest),
        unit: 'events/s',
        goal: '>= 50000 events/s',
        pass: ingest >= 50_000,
        note: `${(ingest / bare).toFixed(2)} of a bare unindexed insert loop (${Math.round(bare)} events/s)`,
      },
      {
        name: `sqlite: controlStats, ${inWindow} events in 24h, all controls`,
        value: all,
        unit: 'ms',
        goal: '< 200 ms',
        pass: all < 200,
        note: `stored as ${mix.rows} rows + ${mix.rollups} rollup rows; ${(all / baseline).toFixed(2)}x a bare count(*) of the window's rows (${baseline.toFixed(1)} ms)`,
      },
      { name: 'sqlite: controlStats, one agent (1/10 of events)', value: agent, unit: 'ms' },
      { name: 'sqlite: controlStats, one control (1/50 of events)', value: one, unit: 'ms' },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgresBench(): Promise<BenchRow[]> {
  const schema = `guard_bench_${process.pid}`;
  let store: PostgresStore;
  try {
    store = await PostgresStore.open(PG_URL, { schema, connectionTimeoutMs: 3000 });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return [{ name: 'postgres: skipped', value: 0, unit: '', note: `${PG_URL} unreachable: ${reason}` }];
  }
  const admin = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${schema}` });
  await admin.connect();
  try {
    const now = Date.now();
    const ingestSmall = await fill(store, 100 * BATCH, BATCH, now);
    await admin.query('TRUNCATE events');
    const mix = await fillMixed(store, STATS_EVENTS, 10_000, now);
    // What autovacuum does on a live server: mark pages all-visible (index-only scans) and gather statistics.
    await admin.query('VACUUM ANALYZE events');
    await admin.query('VACUUM ANALYZE event_rollups');
    const since = new Date(now - DAY_MS).toISOString();
    const baseline = await timeMs(() => admin.query('SELECT count(*) FROM events WHERE ts >= $1', [since]));
    const all = await timeMs(() => store.controlStats({ since }));
    const agent = await timeMs(() => store.controlStats({ since, agent_name: 'agent-3' }));
    const one = await timeMs(() => store.controlStats({ since, control_id: 7 }));
    return [
      { name: 'postgres: insertEvents, batches of 1000', value: Math.round(ingestSmall), unit: 'events/s' },
      {
        name: `postgres: controlStats, ${STATS_EVENTS} events in 24h, all controls`,
        value: all,
        unit: 'ms',
        goal: '< 300 ms',
        pass: all < 300,
        note: `stored as ${mix.rows} rows + ${mix.rollups} rollup rows; ${(all / baseline).toFixed(2)}x a bare count(*) of the window's rows (${baseline.toFixed(1)} ms)`,
      },
      { name: 'postgres: controlStats, one agent', value: agent, unit: 'ms' },
      { name: 'postgres: controlStats, one control', value: one, unit: 'ms' },
    ];
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.end();
    await store.close();
  }
}

const benchmarks: Benchmark[] = [
  { name: 'store-sqlite', run: sqliteBench },
  { name: 'store-postgres', run: postgresBench },
];

export const section: BenchSection = {
  name: 'Event storage',
  chapter: 'Observability and storage',
  method: `Event ingest (\`insertEvents\`, batches of 1,000) and the stats query (\`controlStats\`) over
1,000,000 events in a 24 h window, on SQLite and (when reachable) PostgreSQL, called on the
store directly. The events are stored the way the server stores them: matches and errors
(10%) as rows, non-matches (90%) as per-minute rollups. Baselines in the same run: a bare
better-sqlite3 insert into an unindexed table, and a bare count of the window's rows.`,
  benchmarks,
};
