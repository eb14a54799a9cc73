/**
 * Observability's rows in SQLite: events, per-minute non-match rollups and the stats read
 * from both. Stats walk covering indexes with loose index scans, so they never read the
 * table itself.
 */
import type Database from 'better-sqlite3';
import type { StoredEvent } from '../../model/index.js';
import { isoOfEpochMs } from '../../model/iso-time.js';
import {
  EVENT_COLUMNS,
  EVENT_COLUMNS_COUNT,
  epochMsOf,
  eventRecordOf,
  mergedRollups,
  rollupOutcomeOf,
  ROW_OUTCOMES,
  SHADOW_OUTCOME,
  writeEventValues,
  statsRowsOf,
  type StatsPart,
} from '../records.js';
import type { ControlStatsRow, EventPage, EventQuery, EventRollup, EventStore, StatsQuery } from '../types.js';
import type { SqliteDatabase } from './database.js';

interface EventRow {
  control_execution_id: string;
  trace_id: string;
  span_id: string;
  agent_name: string;
  control_id: number;
  control_name: string;
  check_stage: string;
  applies_to: string;
  action: string;
  matched: number;
  outcome: number;
  confidence: number;
  ts: number;
  execution_duration_ms: number;
  evaluator_name: string | null;
  selector_path: string | null;
  error_message: string | null;
  metadata: string | null;
  mode: string;
  set_revision: number | null;
  example: string | null;
  session_id: string | null;
}

function eventOf(row: EventRow): StoredEvent {
  return eventRecordOf(row, {
    control_id: row.control_id,
    matched: row.matched === 1,
    timestamp: isoOfEpochMs(row.ts),
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    set_revision: row.set_revision,
  });
}

const ACTIONS = ['allow', 'deny', 'steer', 'warn', 'log'] as const;

type RollupPart = { control_id: number; mode: string; count: number; duration_sum: number };

/** Each step of a loose index scan jumps to the next distinct control id of `table`'s index. */
function controlIdsOf(db: Database.Database, table: 'events' | 'event_rollups'): Database.Statement {
  return db
    .prepare(
      `WITH RECURSIVE ids(id) AS (
         SELECT (SELECT min(control_id) FROM ${table})
         UNION ALL
         SELECT (SELECT min(control_id) FROM ${table} WHERE control_id > ids.id) FROM ids WHERE ids.id IS NOT NULL)
       SELECT id FROM ids WHERE id IS NOT NULL`,
    )
    .pluck();
}

/**
 * Rows per INSERT statement: a batch is inserted by the largest of these that fit, so at
 * most one statement of each size runs per batch. One statement of several rows binds its
 * values in one call and runs the statement's setup, reset and result once: on the
 * writer thread that saves about a tenth of the work per row. More than 16 rows a
 * statement cost more again: better-sqlite3 then allocates and frees memory per call for
 * the handles of that many values. The statements are `INSERT OR ROLLBACK`: a plain
 * INSERT of several rows keeps a statement journal (spilled to a temporary file as it
 * grows) so that a refused row can undo the rows before it, and that halved the rows
 * inserted per second. A refused row fails the whole batch either way, and insertEvents
 * always runs in a transaction of its own, so rolling that transaction back undoes
 * exactly the batch (docs/storage.md).
 */
const ROWS_PER_INSERT = [16, 8, 4, 2, 1] as const;

function prepare(db: Database.Database) {
  const row = `(${new Array<string>(EVENT_COLUMNS_COUNT).fill('?').join(', ')})`;
  return {
    /** `INSERT OR ROLLBACK` of each size of ROWS_PER_INSERT, by size. */
    insertRows: new Map(
      ROWS_PER_INSERT.map((n) => [n, db.prepare(`INSERT OR ROLLBACK INTO events (${EVENT_COLUMNS}) VALUES ${new Array<string>(n).fill(row).join(', ')}`)]),
    ),
    statsControlIds: controlIdsOf(db, 'events'),
    statsPart: db.prepare(
      `SELECT count(*) AS count, total(execution_duration_ms) AS duration_sum FROM events INDEXED BY events_stats
       WHERE control_id = ? AND outcome = ? AND action = ? AND ts >= ?`,
    ),
    statsAgentParts: db.prepare(
      `SELECT control_id, outcome, action, count(*) AS count, total(execution_duration_ms) AS duration_sum
       FROM events INDEXED BY events_agent_ts WHERE agent_name = ? AND ts >= ? AND outcome NOT IN (0, ${SHADOW_OUTCOME})
       GROUP BY control_id, outcome, action`,
    ),
    upsertRollup: db.prepare(
      `INSERT INTO event_rollups (bucket, agent_name, control_id, control_name, check_stage, applies_to,
         evaluator_name, mode, count, total_duration_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (bucket, agent_name, control_id, control_name, check_stage, applies_to, evaluator_name, mode)
       DO UPDATE SET count = count + excluded.count, total_duration_ms = total_duration_ms + excluded.total_duration_ms`,
    ),
    rollupControlIds: controlIdsOf(db, 'event_rollups'),
    rollupControlParts: db.prepare(
      `SELECT control_id, mode, sum(count) AS count, total(total_duration_ms) AS duration_sum
       FROM event_rollups INDEXED BY event_rollups_control WHERE control_id = ? AND bucket >= ? GROUP BY control_id, mode`,
    ),
    rollupAgentParts: db.prepare(
      `SELECT control_id, mode, sum(count) AS count, total(total_duration_ms) AS duration_sum
       FROM event_rollups INDEXED BY event_rollups_agent WHERE agent_name = ? AND bucket >= ? GROUP BY control_id, mode`,
    ),
    rollupControlName: db
      .prepare('SELECT control_name FROM event_rollups INDEXED BY event_rollups_control WHERE control_id = ? LIMIT 1')
      .pluck(),
    pruneRollups: db.prepare('DELETE FROM event_rollups WHERE bucket < ?'),
    controlName: db.prepare('SELECT name FROM controls WHERE control_id = ?').pluck(),
    eventControlName: db
      .prepare('SELECT control_name FROM events INDEXED BY events_stats WHERE control_id = ? LIMIT 1')
      .pluck(),
    pruneBatch: db.prepare(
      'DELETE FROM events WHERE id IN (SELECT id FROM events INDEXED BY events_ts WHERE ts < ? LIMIT ?)',
    ),
  };
}

export class SqliteEvents implements EventStore {
  private readonly s: ReturnType<typeof prepare>;

  constructor(private readonly database: SqliteDatabase) {
    this.s = prepare(database.db);
  }

  async insertEvents(events: StoredEvent[]): Promise<void> {
    if (events.length === 0) return;
    this.database.write(() => {
      let next = 0;
      while (next < events.length) {
        const left = events.length - next;
        const rows = ROWS_PER_INSERT.find((n) => n <= left)!;
        const values = new Array<unknown>(rows * EVENT_COLUMNS_COUNT);
        for (let offset = 0; offset < values.length; offset += EVENT_COLUMNS_COUNT, next++) {
          const e = events[next]!;
          writeEventValues(values, offset, e, e.matched ? 1 : 0, epochMsOf(e.timestamp, 'timestamp'));
        }
        this.s.insertRows.get(rows)!.run(...values);
      }
    });
  }

  async insertRollups(rollups: EventRollup[]): Promise<void> {
    if (rollups.length === 0) return;
    const rows = mergedRollups(rollups);
    const upsert = this.s.upsertRollup;
    this.database.write(() => {
      for (const r of rows) {
        upsert.run(r.bucket_ms, r.agent_name, r.control_id, r.control_name, r.check_stage, r.applies_to,
          r.evaluator_name, r.mode, r.count, r.total_duration_ms);
      }
    });
  }

  async queryEvents(query: EventQuery): Promise<EventPage> {
    // Filters vary per call, so this statement is built per query; the database's
    // statement cache keeps each distinct filter shape prepared once.
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown) => {
      where.push(sql);
      params.push(value);
    };
    if (query.agent_name !== undefined) add('agent_name = ?', query.agent_name);
    if (query.control_ids !== undefined) add('control_id IN (SELECT value FROM json_each(?))', JSON.stringify(query.control_ids));
    if (query.actions !== undefined) add('action IN (SELECT value FROM json_each(?))', JSON.stringify(query.actions));
    if (query.stages !== undefined) add('check_stage IN (SELECT value FROM json_each(?))', JSON.stringify(query.stages));
    if (query.matched !== undefined) add('matched = ?', query.matched ? 1 : 0);
    if (query.trace_id !== undefined) add('trace_id = ?', query.trace_id);
    if (query.session_id !== undefined) add('session_id = ?', query.session_id);
    if (query.mode !== undefined) add('mode = ?', query.mode);
    if (query.with_example === true) where.push('example IS NOT NULL');
    if (query.start_time !== undefined) add('ts >= ?', epochMsOf(query.start_time, 'start_time'));
    if (query.end_time !== undefined) add('ts < ?', epochMsOf(query.end_time, 'end_time'));
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    return this.database.read(() => {
      const total = this.database.cached(`SELECT count(*) FROM events ${clause}`).pluck().get(...params) as number;
      const rows = this.database
        .cached(`SELECT * FROM events ${clause} ORDER BY ts DESC, id DESC LIMIT ? OFFSET ?`)
        .all(...params, Math.max(0, query.limit), Math.max(0, query.offset)) as EventRow[];
      return { events: rows.map(eventOf), total };
    });
  }

  async controlStats(query: StatsQuery): Promise<ControlStatsRow[]> {
    const since = epochMsOf(query.since, 'since');
    return this.database.read(() => {
      const { parts, rollups } = query.agent_name !== undefined ? this.agentParts(query.agent_name, since, query.control_id) : this.controlParts(since, query.control_id);
      for (const r of rollups) parts.push({ control_id: r.control_id, outcome: rollupOutcomeOf(r.mode), action: '', count: r.count, duration_sum: r.duration_sum });
      return statsRowsOf(parts, (id) => {
        const name = (this.s.controlName.get(id) ?? this.s.rollupControlName.get(id) ?? this.s.eventControlName.get(id)) as
          | string
          | undefined;
        return name ?? '';
      });
    });
  }

  /** One agent's window is a contiguous range of events_agent_ts: scan and group it. */
  private agentParts(agentName: string, since: number, controlId: number | undefined): { parts: StatsPart[]; rollups: RollupPart[] } {
    let parts = this.s.statsAgentParts.all(agentName, since) as StatsPart[];
    let rollups = this.s.rollupAgentParts.all(agentName, since) as RollupPart[];
    if (controlId !== undefined) {
      parts = parts.filter((p) => p.control_id === controlId);
      rollups = rollups.filter((p) => p.control_id === controlId);
    }
    return { parts, rollups };
  }

  /** Each (control, outcome, action) is one range seek of events_stats; each control's rollups one of event_rollups_control. */
  private controlParts(since: number, controlId: number | undefined): { parts: StatsPart[]; rollups: RollupPart[] } {
    const parts: StatsPart[] = [];
    const ids = controlId !== undefined ? [controlId] : (this.s.statsControlIds.all() as number[]);
    const rollupIds = controlId !== undefined ? [controlId] : (this.s.rollupControlIds.all() as number[]);
    const rollups = rollupIds.flatMap((id) => this.s.rollupControlParts.all(id, since) as RollupPart[]);
    for (const control_id of ids) {
      for (const outcome of ROW_OUTCOMES) {
        for (const action of ACTIONS) {
          const part = this.s.statsPart.get(control_id, outcome, action, since) as { count: number; duration_sum: number };
          if (part.count > 0) parts.push({ control_id, outcome, action, ...part });
        }
      }
    }
    return { parts, rollups };
  }

  async pruneEvents(before: string): Promise<number> {
    const cutoff = epochMsOf(before, 'before');
    const deleted = this.database.pruneInBatches(this.s.pruneBatch, cutoff);
    // Rollups are few (one row per minute and key), so one statement removes them.
    return deleted + this.database.write(() => this.s.pruneRollups.run(cutoff).changes);
  }
}
