/**
 * Observability's rows in PostgreSQL: events, per-minute non-match rollups and the stats
 * read from both. Inserts send each column as one array parameter, unnested server-side;
 * stats group over covering indexes.
 */
import type pg from 'pg';
import type { StoredEvent } from '../../model/index.js';
import { EVENT_COLUMNS, EVENT_COLUMNS_COUNT, eventRecordOf, eventValuesOf, isoOf, mergedRollups, OUTCOME_NON_MATCH, rollupOutcomeOf, SHADOW_OUTCOME, statsRowsOf, type StatsPart } from '../records.js';
import type { ControlStatsRow, EventPage, EventQuery, EventRollup, EventStore, StatsQuery } from '../types.js';
import type { PostgresDatabase } from './database.js';
import { mapPgError } from './errors.js';

interface EventRow {
  control_execution_id: string;
  trace_id: string;
  span_id: string;
  agent_name: string;
  control_id: string;
  control_name: string;
  check_stage: string;
  applies_to: string;
  action: string;
  matched: boolean;
  outcome: number;
  confidence: number;
  ts: Date;
  execution_duration_ms: number;
  evaluator_name: string | null;
  selector_path: string | null;
  error_message: string | null;
  metadata: Record<string, unknown> | null;
  mode: string;
  set_revision: string | null;
  example: string | null;
  session_id: string | null;
}

function eventOf(row: EventRow): StoredEvent {
  return eventRecordOf(row, {
    control_id: Number(row.control_id),
    matched: row.matched,
    timestamp: row.ts.toISOString(),
    metadata: row.metadata,
    set_revision: row.set_revision === null ? null : Number(row.set_revision),
  });
}

/** One statement per batch: each column travels as one array parameter, unnested server-side. */
async function insertBatch(client: pg.Pool | pg.PoolClient, batch: readonly StoredEvent[]): Promise<void> {
  const columns: unknown[][] = Array.from({ length: EVENT_COLUMNS_COUNT }, () => new Array<unknown>(batch.length));
  batch.forEach((e, i) => eventValuesOf(e, e.matched, isoOf(e.timestamp, 'timestamp')).forEach((v, c) => (columns[c]![i] = v)));
  await client.query(
    `INSERT INTO events (${EVENT_COLUMNS})
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[],
       $8::text[], $9::text[], $10::boolean[], $11::smallint[], $12::float8[], $13::timestamptz[], $14::float8[],
       $15::text[], $16::text[], $17::text[], $18::jsonb[], $19::text[], $20::bigint[], $21::text[], $22::text[])`,
    columns,
  );
}

/** Code-point order, the same in every locale (for the lock order of rollup upserts). */
function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export class PostgresEvents implements EventStore {
  constructor(private readonly database: PostgresDatabase) {}

  async insertEvents(events: StoredEvent[]): Promise<void> {
    if (events.length === 0) return;
    const size = this.database.insertBatchSize;
    if (events.length <= size) {
      try {
        await insertBatch(this.database.pool, events);
      } catch (error) {
        throw mapPgError(error);
      }
      return;
    }
    await this.database.write(async (tx) => {
      for (let i = 0; i < events.length; i += size) await insertBatch(tx.client, events.slice(i, i + size));
    });
  }

  async insertRollups(rollups: EventRollup[]): Promise<void> {
    if (rollups.length === 0) return;
    // Sorted by key: replicas upserting overlapping keys then lock rows in the same order
    // and cannot deadlock each other.
    const rows = mergedRollups(rollups).sort(
      (a, b) =>
        a.bucket_ms - b.bucket_ms ||
        cmp(a.agent_name, b.agent_name) ||
        a.control_id - b.control_id ||
        cmp(a.control_name, b.control_name) ||
        cmp(a.check_stage, b.check_stage) ||
        cmp(a.applies_to, b.applies_to) ||
        cmp(a.evaluator_name, b.evaluator_name) ||
        cmp(a.mode, b.mode),
    );
    await this.database.query(
      `INSERT INTO event_rollups AS r (bucket, agent_name, control_id, control_name, check_stage, applies_to,
         evaluator_name, mode, count, total_duration_ms)
       SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
         $7::text[], $8::text[], $9::bigint[], $10::float8[])
       ON CONFLICT (bucket, agent_name, control_id, control_name, check_stage, applies_to, evaluator_name, mode)
       DO UPDATE SET count = r.count + excluded.count, total_duration_ms = r.total_duration_ms + excluded.total_duration_ms`,
      [
        rows.map((r) => new Date(r.bucket_ms).toISOString()),
        rows.map((r) => r.agent_name),
        rows.map((r) => r.control_id),
        rows.map((r) => r.control_name),
        rows.map((r) => r.check_stage),
        rows.map((r) => r.applies_to),
        rows.map((r) => r.evaluator_name),
        rows.map((r) => r.mode),
        rows.map((r) => r.count),
        rows.map((r) => r.total_duration_ms),
      ],
    );
  }

  async queryEvents(query: EventQuery): Promise<EventPage> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: (n: string) => string, value: unknown) => {
      params.push(value);
      where.push(sql(`$${params.length}`));
    };
    if (query.agent_name !== undefined) add((n) => `agent_name = ${n}`, query.agent_name);
    if (query.control_ids !== undefined) add((n) => `control_id = ANY(${n}::bigint[])`, query.control_ids);
    if (query.actions !== undefined) add((n) => `action = ANY(${n}::text[])`, query.actions);
    if (query.stages !== undefined) add((n) => `check_stage = ANY(${n}::text[])`, query.stages);
    if (query.matched !== undefined) add((n) => `matched = ${n}`, query.matched);
    if (query.trace_id !== undefined) add((n) => `trace_id = ${n}`, query.trace_id);
    if (query.session_id !== undefined) add((n) => `session_id = ${n}`, query.session_id);
    if (query.mode !== undefined) add((n) => `mode = ${n}`, query.mode);
    if (query.with_example === true) where.push('example IS NOT NULL');
    if (query.start_time !== undefined) add((n) => `ts >= ${n}`, isoOf(query.start_time, 'start_time'));
    if (query.end_time !== undefined) add((n) => `ts < ${n}`, isoOf(query.end_time, 'end_time'));
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const n = params.length;
    const [rows, count] = await Promise.all([
      this.database.query<EventRow>(`SELECT * FROM events ${clause} ORDER BY ts DESC, id DESC LIMIT $${n + 1} OFFSET $${n + 2}`, [
        ...params,
        Math.max(0, query.limit),
        Math.max(0, query.offset),
      ]),
      this.database.query<{ total: string }>(`SELECT count(*) AS total FROM events ${clause}`, params),
    ]);
    return { events: rows.map(eventOf), total: Number(count[0]?.total ?? 0) };
  }

  async controlStats(query: StatsQuery): Promise<ControlStatsRow[]> {
    const params: unknown[] = [isoOf(query.since, 'since')];
    const where: string[] = [];
    if (query.agent_name !== undefined) {
      params.push(query.agent_name);
      where.push(`agent_name = $${params.length}`);
    }
    if (query.control_id !== undefined) {
      params.push(query.control_id);
      where.push(`control_id = $${params.length}`);
    }
    const filter = where.map((w) => ` AND ${w}`).join('');
    // Grouped over the covering (ts / agent_name+ts / control_id+ts) indexes; names are
    // looked up afterwards for the few controls found, not carried through the scan.
    // Non-matches count from the rollups only: sampled non-match rows are skipped.
    const [parts, rollups] = await Promise.all([
      this.database.query<{ control_id: string; outcome: number; action: string; count: string; duration_sum: number }>(
        `SELECT control_id, outcome, action, count(*) AS count, sum(execution_duration_ms) AS duration_sum
         FROM events WHERE ts >= $1 AND outcome NOT IN (${OUTCOME_NON_MATCH}, ${SHADOW_OUTCOME + OUTCOME_NON_MATCH})${filter}
         GROUP BY control_id, outcome, action`,
        params,
      ),
      this.database.query<{ control_id: string; mode: string; count: string; duration_sum: number }>(
        `SELECT control_id, mode, sum(count) AS count, sum(total_duration_ms) AS duration_sum
         FROM event_rollups WHERE bucket >= $1${filter} GROUP BY control_id, mode`,
        params,
      ),
    ]);
    const all: StatsPart[] = [
      ...parts.map((p) => ({ ...p, control_id: Number(p.control_id), count: Number(p.count) })),
      ...rollups.map((r) => ({
        control_id: Number(r.control_id),
        outcome: rollupOutcomeOf(r.mode),
        action: '',
        count: Number(r.count),
        duration_sum: r.duration_sum,
      })),
    ];
    const names = await this.controlNames([...new Set(all.map((p) => p.control_id))]);
    return statsRowsOf(all, (id) => names.get(id) ?? '');
  }

  /** Names of the controls stats found: the control's own, else the newest rollup's or event's. */
  private async controlNames(ids: number[]): Promise<Map<number, string>> {
    const names = new Map<number, string>();
    if (ids.length === 0) return names;
    const rows = await this.database.query<{ control_id: string; name: string }>(
      // The rollups first: one seek of (control_id, bucket) each. Asked for a control with no
      // event rows, PostgreSQL walks the whole ts index of events (~10 ms per control), and
      // most controls of a quiet hour have only rolled-up non-matches.
      `SELECT i.id AS control_id, COALESCE(c.name,
         (SELECT r.control_name FROM event_rollups r WHERE r.control_id = i.id ORDER BY r.bucket DESC LIMIT 1),
         (SELECT e.control_name FROM events e WHERE e.control_id = i.id ORDER BY e.ts DESC LIMIT 1), '') AS name
       FROM unnest($1::bigint[]) AS i(id) LEFT JOIN controls c ON c.control_id = i.id`,
      [ids],
    );
    for (const row of rows) names.set(Number(row.control_id), row.name);
    return names;
  }

  async pruneEvents(before: string): Promise<number> {
    const cutoff = isoOf(before, 'before');
    const deleted = await this.database.pruneInBatches(
      'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE ts < $1 LIMIT $2) RETURNING 1',
      cutoff,
    );
    // Rollups are few (one row per minute and key), so one statement removes them.
    const [gone] = await this.database.query<{ n: string }>(
      'WITH gone AS (DELETE FROM event_rollups WHERE bucket < $1 RETURNING 1) SELECT count(*) AS n FROM gone',
      [cutoff],
    );
    return deleted + Number(gone?.n ?? 0);
  }
}
