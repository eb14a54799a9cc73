/**
 * The embedded store: one SQLite file (or `:memory:`) through better-sqlite3. Every
 * statement is prepared once when the store opens; every multi-row change runs inside
 * `db.transaction`, so a failure rolls the whole change back.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { AgentPatch, AgentRecord, ControlRecord, ObservabilityEvent } from '../../model/index.js';
import {
  batchError,
  dataWithEnabled,
  enabledAfter,
  epochMsOf,
  nowIso,
  mergedRollups,
  OUTCOME_ERROR,
  OUTCOME_MATCH,
  OUTCOME_NON_MATCH,
  OUTCOME_SELECTOR_MISSING,
  outcomeOf,
  selectorMissingOf,
  statsRowsOf,
  storedDataOf,
  uniqueSorted,
  type StatsPart,
} from '../records.js';
import {
  StoreError,
  type ControlPage,
  type ControlPatch,
  type ControlStatsRow,
  type EventPage,
  type EventRollup,
  type EventQuery,
  type Link,
  type NewRecordedStep,
  type RecordedStepPage,
  type RecordedStepQuery,
  type NewAgent,
  type NewControl,
  type StatsQuery,
  type Store,
  type StoreChange,
} from '../types.js';
import { sqliteMigrations, type Migration } from './migrations.js';

export interface SqliteStoreOptions {
  /** How long a writer waits for another connection's lock before failing (ms). */
  busyTimeoutMs?: number;
  /** Rows deleted per transaction when pruning, so writers are never blocked for long. */
  pruneBatchSize?: number;
  /** SQLite page cache per connection, in KiB (default 64 MiB). */
  cacheSizeKib?: number;
  /** Bytes of the file read through mmap (default 256 MiB; 0 turns it off). */
  mmapSizeBytes?: number;
}

interface ControlRow {
  control_id: number;
  name: string;
  enabled: number;
  data: string | null;
  managed_by: string | null;
  source: string | null;
  created_at: string;
  updated_at: string;
}

interface AgentRow {
  agent_name: string;
  agent_description: string | null;
  agent_version: string | null;
  steps: string;
  metadata: string | null;
  managed_by: string | null;
  created_at: string;
  updated_at: string;
}

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
}

const ACTIONS = ['allow', 'deny', 'steer', 'warn', 'log'] as const;
/** Outcomes stats read from event rows; other non-matches come from the rollups. */
const ROW_OUTCOMES = [OUTCOME_MATCH, OUTCOME_ERROR, OUTCOME_SELECTOR_MISSING] as const;

function controlOf(row: ControlRow): ControlRecord {
  const enabled = row.enabled === 1;
  return {
    control_id: row.control_id,
    name: row.name,
    enabled,
    data: dataWithEnabled(row.data, enabled),
    managed_by: row.managed_by,
    source: row.source,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function agentOf(row: AgentRow): AgentRecord {
  return {
    agent_name: row.agent_name,
    agent_description: row.agent_description,
    agent_version: row.agent_version,
    steps: JSON.parse(row.steps) as AgentRecord['steps'],
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    managed_by: row.managed_by,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function eventOf(row: EventRow): ObservabilityEvent {
  return {
    control_execution_id: row.control_execution_id,
    trace_id: row.trace_id,
    span_id: row.span_id,
    agent_name: row.agent_name,
    control_id: row.control_id,
    control_name: row.control_name,
    check_stage: row.check_stage as ObservabilityEvent['check_stage'],
    applies_to: row.applies_to as ObservabilityEvent['applies_to'],
    action: row.action as ObservabilityEvent['action'],
    matched: row.matched === 1,
    confidence: row.confidence,
    timestamp: new Date(row.ts).toISOString(),
    execution_duration_ms: row.execution_duration_ms,
    evaluator_name: row.evaluator_name,
    selector_path: row.selector_path,
    error_message: row.error_message,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    ...selectorMissingOf(row.outcome),
  };
}

/** Maps SQLite failures to the store's error kinds; anything else passes through. */
function mapError(error: unknown): unknown {
  if (error instanceof StoreError) return error;
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new StoreError('conflict', message);
  }
  if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') return new StoreError('not_found', message);
  if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || code === 'SQLITE_CANTOPEN' || code === 'SQLITE_IOERR') {
    return new StoreError('unavailable', message);
  }
  return error;
}

/** Applies the migrations not yet recorded; safe to run on every open and from two processes. */
export function migrateSqlite(db: Database.Database, migrations: readonly Migration[] = sqliteMigrations): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
  const applied = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').pluck();
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  const done: number[] = [];
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    // IMMEDIATE takes the write lock before the check, so a second process opening the
    // same file waits and then sees the migration as applied.
    db.transaction(() => {
      if (applied.get(migration.version) !== undefined) return;
      db.exec(migration.sql);
      record.run(migration.version, migration.name, nowIso());
      done.push(migration.version);
    }).immediate();
  }
  return done;
}

export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;
  private readonly pruneBatchSize: number;
  private readonly s: ReturnType<SqliteStore['prepareStatements']>;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    const file = path === '' ? ':memory:' : path;
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    try {
      this.db = new Database(file);
    } catch (error) {
      throw mapError(error);
    }
    this.pruneBatchSize = options.pruneBatchSize ?? 10_000;
    this.db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
    this.db.pragma('journal_mode = WAL');
    // NORMAL is durable against application crashes in WAL mode and much faster than FULL.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = ON');
    // Checkpoint every ~40 MB of WAL instead of every 4 MB: each checkpoint writes scattered
    // index pages back and syncs, and doing it every few batches was most of ingest's cost.
    this.db.pragma('wal_autocheckpoint = 10000');
    // The event indexes are written at scattered positions (by control, by agent); with
    // SQLite's default 2 MB page cache every batch would re-read index pages from the OS.
    this.db.pragma(`cache_size = -${Math.max(2048, Math.floor(options.cacheSizeKib ?? 65_536))}`);
    if (file !== ':memory:') this.db.pragma(`mmap_size = ${Math.max(0, Math.floor(options.mmapSizeBytes ?? 268_435_456))}`);
    migrateSqlite(this.db);
    this.s = this.prepareStatements();
  }

  private prepareStatements() {
    const db = this.db;
    return {
      bump: db.prepare('UPDATE store_revision SET value = value + 1 WHERE id = 1'),
      revision: db.prepare('SELECT value FROM store_revision WHERE id = 1').pluck(),
      insertControl: db.prepare(
        `INSERT INTO controls (name, enabled, data, managed_by, source, created_at, updated_at)
         VALUES (@name, @enabled, @data, @managed_by, @source, @now, @now) RETURNING *`,
      ),
      controlById: db.prepare('SELECT * FROM controls WHERE control_id = ?'),
      controlByName: db.prepare('SELECT * FROM controls WHERE name = ?'),
      controlsAfter: db.prepare('SELECT * FROM controls WHERE control_id > ? ORDER BY control_id LIMIT ?'),
      allControls: db.prepare('SELECT * FROM controls ORDER BY control_id'),
      countControls: db.prepare('SELECT count(*) FROM controls').pluck(),
      updateControl: db.prepare(
        `UPDATE controls SET name = @name, enabled = @enabled, data = @data, managed_by = @managed_by,
         source = @source, updated_at = @now WHERE control_id = @control_id RETURNING *`,
      ),
      deleteControl: db.prepare('DELETE FROM controls WHERE control_id = ?'),
      agent: db.prepare('SELECT * FROM agents WHERE agent_name = ?'),
      allAgents: db.prepare('SELECT * FROM agents ORDER BY agent_name'),
      insertAgent: db.prepare(
        `INSERT INTO agents (agent_name, agent_description, agent_version, steps, metadata, managed_by, created_at, updated_at)
         VALUES (@agent_name, @agent_description, @agent_version, @steps, @metadata, @managed_by, @now, @now) RETURNING *`,
      ),
      updateAgent: db.prepare(
        `UPDATE agents SET agent_description = @agent_description, agent_version = @agent_version, steps = @steps,
         metadata = @metadata, managed_by = @managed_by, updated_at = @now WHERE agent_name = @agent_name RETURNING *`,
      ),
      link: db.prepare('INSERT OR IGNORE INTO control_links (agent_name, control_id) VALUES (?, ?)'),
      unlink: db.prepare('DELETE FROM control_links WHERE agent_name = ? AND control_id = ?'),
      agentControls: db.prepare(
        `SELECT c.* FROM control_links l JOIN controls c ON c.control_id = l.control_id
         WHERE l.agent_name = ? ORDER BY c.control_id`,
      ),
      agentsOfControl: db.prepare('SELECT agent_name FROM control_links WHERE control_id = ? ORDER BY agent_name').pluck(),
      allLinks: db.prepare('SELECT agent_name, control_id FROM control_links ORDER BY agent_name, control_id'),
      insertEvent: db.prepare(
        `INSERT INTO events (control_execution_id, trace_id, span_id, agent_name, control_id, control_name,
           check_stage, applies_to, action, matched, outcome, confidence, ts, execution_duration_ms,
           evaluator_name, selector_path, error_message, metadata)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      // Loose index scans: each step jumps to the next distinct control id in the index.
      statsControlIds: db
        .prepare(
          `WITH RECURSIVE ids(id) AS (
             SELECT (SELECT min(control_id) FROM events)
             UNION ALL
             SELECT (SELECT min(control_id) FROM events WHERE control_id > ids.id) FROM ids WHERE ids.id IS NOT NULL)
           SELECT id FROM ids WHERE id IS NOT NULL`,
        )
        .pluck(),
      statsPart: db.prepare(
        `SELECT count(*) AS count, total(execution_duration_ms) AS duration_sum FROM events INDEXED BY events_stats
         WHERE control_id = ? AND outcome = ? AND action = ? AND ts >= ?`,
      ),
      statsAgentParts: db.prepare(
        `SELECT control_id, outcome, action, count(*) AS count, total(execution_duration_ms) AS duration_sum
         FROM events INDEXED BY events_agent_ts WHERE agent_name = ? AND ts >= ? AND outcome <> 0
         GROUP BY control_id, outcome, action`,
      ),
      upsertRollup: db.prepare(
        `INSERT INTO event_rollups (bucket, agent_name, control_id, control_name, check_stage, applies_to,
           evaluator_name, count, total_duration_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (bucket, agent_name, control_id, control_name, check_stage, applies_to, evaluator_name)
         DO UPDATE SET count = count + excluded.count, total_duration_ms = total_duration_ms + excluded.total_duration_ms`,
      ),
      // Loose index scan over rollup control ids, as statsControlIds does over events.
      rollupControlIds: db
        .prepare(
          `WITH RECURSIVE ids(id) AS (
             SELECT (SELECT min(control_id) FROM event_rollups)
             UNION ALL
             SELECT (SELECT min(control_id) FROM event_rollups WHERE control_id > ids.id) FROM ids WHERE ids.id IS NOT NULL)
           SELECT id FROM ids WHERE id IS NOT NULL`,
        )
        .pluck(),
      rollupControlParts: db.prepare(
        `SELECT control_id, sum(count) AS count, total(total_duration_ms) AS duration_sum
         FROM event_rollups INDEXED BY event_rollups_control WHERE control_id = ? AND bucket >= ? GROUP BY control_id`,
      ),
      rollupAgentParts: db.prepare(
        `SELECT control_id, sum(count) AS count, total(total_duration_ms) AS duration_sum
         FROM event_rollups INDEXED BY event_rollups_agent WHERE agent_name = ? AND bucket >= ? GROUP BY control_id`,
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

  /**
   * Runs `fn` in one transaction and maps database errors to store errors. IMMEDIATE takes
   * the write lock at BEGIN, waiting up to busy_timeout for another connection (the event
   * writer thread, another process). A deferred transaction that read first would instead
   * fail at once with "database is locked" when that connection committed in between.
   */
  private write<T>(fn: () => T): T {
    try {
      return this.db.transaction(fn).immediate();
    } catch (error) {
      throw mapError(error);
    }
  }

  private read<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      throw mapError(error);
    }
  }

  private controlRow(id: number): ControlRow {
    const row = this.s.controlById.get(id) as ControlRow | undefined;
    if (!row) throw new StoreError('not_found', `control ${id} does not exist`);
    return row;
  }

  private controlRowByName(name: string): ControlRow {
    const row = this.s.controlByName.get(name) as ControlRow | undefined;
    if (!row) throw new StoreError('not_found', `control "${name}" does not exist`);
    return row;
  }

  // The *Tx methods run inside a transaction the caller opened; applyChanges reuses them.

  private createControlTx(control: NewControl): ControlRecord {
    if (this.s.controlByName.get(control.name) !== undefined) {
      throw new StoreError('conflict', `a control named "${control.name}" already exists`);
    }
    const row = this.s.insertControl.get({
      name: control.name,
      enabled: (control.data?.enabled ?? true) ? 1 : 0,
      data: storedDataOf(control.data),
      managed_by: control.managed_by ?? null,
      source: control.source ?? null,
      now: nowIso(),
    }) as ControlRow;
    this.s.bump.run();
    return controlOf(row);
  }

  private updateControlTx(current: ControlRow, patch: ControlPatch): ControlRecord {
    if (patch.name !== undefined && patch.name !== current.name) {
      const other = this.s.controlByName.get(patch.name) as ControlRow | undefined;
      if (other) throw new StoreError('conflict', `a control named "${patch.name}" already exists`);
    }
    const enabled = enabledAfter(current.enabled === 1, patch);
    let data = current.data;
    if (patch.data !== undefined) data = storedDataOf(patch.data);
    const row = this.s.updateControl.get({
      control_id: current.control_id,
      name: patch.name ?? current.name,
      enabled: enabled ? 1 : 0,
      data,
      managed_by: patch.managed_by !== undefined ? patch.managed_by : current.managed_by,
      source: patch.source !== undefined ? patch.source : current.source,
      now: nowIso(),
    }) as ControlRow;
    this.s.bump.run();
    return controlOf(row);
  }

  private deleteControlTx(id: number): string[] {
    const agents = this.s.agentsOfControl.all(id) as string[];
    this.s.deleteControl.run(id);
    this.s.bump.run();
    return agents;
  }

  private upsertAgentTx(agent: NewAgent): { agent: AgentRecord; created: boolean } {
    const existing = this.s.agent.get(agent.agent_name) as AgentRow | undefined;
    const values = {
      agent_name: agent.agent_name,
      agent_description: agent.agent_description ?? null,
      agent_version: agent.agent_version ?? null,
      steps: JSON.stringify(agent.steps ?? []),
      metadata: agent.metadata == null ? null : JSON.stringify(agent.metadata),
      // A registration that does not say who owns the agent keeps the owner it had.
      managed_by: agent.managed_by !== undefined ? agent.managed_by : (existing?.managed_by ?? null),
      now: nowIso(),
    };
    const row = (existing ? this.s.updateAgent.get(values) : this.s.insertAgent.get(values)) as AgentRow;
    this.s.bump.run();
    return { agent: agentOf(row), created: !existing };
  }

  private linkTx(agentName: string, controlId: number): boolean {
    if (this.s.agent.get(agentName) === undefined) {
      throw new StoreError('not_found', `agent "${agentName}" does not exist`);
    }
    this.controlRow(controlId);
    const changed = this.s.link.run(agentName, controlId).changes > 0;
    if (changed) this.s.bump.run();
    return changed;
  }

  private unlinkTx(agentName: string, controlId: number): boolean {
    const changed = this.s.unlink.run(agentName, controlId).changes > 0;
    if (changed) this.s.bump.run();
    return changed;
  }

  async createControl(control: NewControl): Promise<ControlRecord> {
    return this.write(() => this.createControlTx(control));
  }

  async getControl(id: number): Promise<ControlRecord | null> {
    const row = this.read(() => this.s.controlById.get(id) as ControlRow | undefined);
    return row ? controlOf(row) : null;
  }

  async getControlByName(name: string): Promise<ControlRecord | null> {
    const row = this.read(() => this.s.controlByName.get(name) as ControlRow | undefined);
    return row ? controlOf(row) : null;
  }

  async listControls(page: { cursor?: number | undefined; limit: number }): Promise<ControlPage> {
    return this.read(() => {
      const limit = Math.max(1, Math.floor(page.limit));
      // One row more than asked tells whether another page exists without a second count.
      const rows = this.s.controlsAfter.all(page.cursor ?? 0, limit + 1) as ControlRow[];
      const has_more = rows.length > limit;
      const controls = rows.slice(0, limit).map(controlOf);
      const total = this.s.countControls.get() as number;
      return { controls, has_more, next_cursor: has_more ? (controls.at(-1)?.control_id ?? null) : null, total };
    });
  }

  async listAllControls(): Promise<ControlRecord[]> {
    return this.read(() => (this.s.allControls.all() as ControlRow[]).map(controlOf));
  }

  async updateControl(id: number, patch: ControlPatch): Promise<ControlRecord> {
    return this.write(() => this.updateControlTx(this.controlRow(id), patch));
  }

  async deleteControl(id: number): Promise<{ unlinked_agents: string[] }> {
    return this.write(() => {
      this.controlRow(id);
      return { unlinked_agents: this.deleteControlTx(id) };
    });
  }

  async getAgent(name: string): Promise<AgentRecord | null> {
    const row = this.read(() => this.s.agent.get(name) as AgentRow | undefined);
    return row ? agentOf(row) : null;
  }

  async listAgents(): Promise<AgentRecord[]> {
    return this.read(() => (this.s.allAgents.all() as AgentRow[]).map(agentOf));
  }

  async upsertAgent(agent: NewAgent): Promise<{ agent: AgentRecord; created: boolean }> {
    return this.write(() => this.upsertAgentTx(agent));
  }

  async patchAgent(name: string, patch: AgentPatch): Promise<AgentRecord> {
    return this.write(() => {
      const current = this.s.agent.get(name) as AgentRow | undefined;
      if (!current) throw new StoreError('not_found', `agent "${name}" does not exist`);
      const row = this.s.updateAgent.get({
        agent_name: name,
        agent_description: patch.agent_description !== undefined ? patch.agent_description : current.agent_description,
        agent_version: patch.agent_version !== undefined ? patch.agent_version : current.agent_version,
        steps: patch.steps !== undefined ? JSON.stringify(patch.steps) : current.steps,
        metadata:
          patch.metadata !== undefined
            ? patch.metadata === null
              ? null
              : JSON.stringify(patch.metadata)
            : current.metadata,
        managed_by: current.managed_by,
        now: nowIso(),
      }) as AgentRow;
      this.s.bump.run();
      return agentOf(row);
    });
  }

  async linkControl(agentName: string, controlId: number): Promise<boolean> {
    return this.write(() => this.linkTx(agentName, controlId));
  }

  async unlinkControl(agentName: string, controlId: number): Promise<boolean> {
    return this.write(() => this.unlinkTx(agentName, controlId));
  }

  async listAgentControls(agentName: string): Promise<ControlRecord[]> {
    return this.read(() => (this.s.agentControls.all(agentName) as ControlRow[]).map(controlOf));
  }

  async agentsOfControl(controlId: number): Promise<string[]> {
    return this.read(() => this.s.agentsOfControl.all(controlId) as string[]);
  }

  async listLinks(): Promise<Link[]> {
    return this.read(() => this.s.allLinks.all() as Link[]);
  }

  async applyChanges(changes: StoreChange[]): Promise<{ touched_agents: string[] }> {
    return this.write(() => {
      const touched: string[] = [];
      changes.forEach((change, index) => {
        try {
          touched.push(...this.applyOne(change));
        } catch (error) {
          throw batchError(mapError(error), change, index);
        }
      });
      return { touched_agents: uniqueSorted(touched) };
    });
  }

  /** Applies one change inside the open transaction; returns the agents it touched. */
  private applyOne(change: StoreChange): string[] {
    switch (change.op) {
      case 'create_control':
        this.createControlTx(change.control);
        return [];
      case 'update_control': {
        const row = this.controlRowByName(change.name);
        this.updateControlTx(row, change.patch);
        return this.s.agentsOfControl.all(row.control_id) as string[];
      }
      case 'delete_control':
        return this.deleteControlTx(this.controlRowByName(change.name).control_id);
      case 'upsert_agent':
        this.upsertAgentTx(change.agent);
        return [change.agent.agent_name];
      case 'link':
        this.linkTx(change.agent_name, this.controlRowByName(change.control_name).control_id);
        return [change.agent_name];
      case 'unlink':
        this.unlinkTx(change.agent_name, this.controlRowByName(change.control_name).control_id);
        return [change.agent_name];
    }
  }

  async revision(): Promise<number> {
    return this.read(() => this.s.revision.get() as number);
  }

  async insertEvents(events: ObservabilityEvent[]): Promise<void> {
    if (events.length === 0) return;
    const insert = this.s.insertEvent;
    this.write(() => {
      for (const e of events) {
        insert.run(
          e.control_execution_id,
          e.trace_id,
          e.span_id,
          e.agent_name,
          e.control_id,
          e.control_name,
          e.check_stage,
          e.applies_to,
          e.action,
          e.matched ? 1 : 0,
          outcomeOf(e),
          e.confidence,
          epochMsOf(e.timestamp, 'timestamp'),
          e.execution_duration_ms,
          e.evaluator_name,
          e.selector_path,
          e.error_message,
          e.metadata === null ? null : JSON.stringify(e.metadata),
        );
      }
    });
  }

  async insertRollups(rollups: EventRollup[]): Promise<void> {
    if (rollups.length === 0) return;
    const rows = mergedRollups(rollups);
    const upsert = this.s.upsertRollup;
    this.write(() => {
      for (const r of rows) {
        upsert.run(r.bucket_ms, r.agent_name, r.control_id, r.control_name, r.check_stage, r.applies_to,
          r.evaluator_name, r.count, r.total_duration_ms);
      }
    });
  }

  async queryEvents(query: EventQuery): Promise<EventPage> {
    // Filters vary per call, so this statement is built per query; the cache below keeps
    // each distinct filter shape prepared once.
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.agent_name !== undefined) {
      where.push('agent_name = ?');
      params.push(query.agent_name);
    }
    if (query.control_ids !== undefined) {
      where.push(`control_id IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(query.control_ids));
    }
    if (query.actions !== undefined) {
      where.push(`action IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(query.actions));
    }
    if (query.stages !== undefined) {
      where.push(`check_stage IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(query.stages));
    }
    if (query.matched !== undefined) {
      where.push('matched = ?');
      params.push(query.matched ? 1 : 0);
    }
    if (query.trace_id !== undefined) {
      where.push('trace_id = ?');
      params.push(query.trace_id);
    }
    if (query.start_time !== undefined) {
      where.push('ts >= ?');
      params.push(epochMsOf(query.start_time, 'start_time'));
    }
    if (query.end_time !== undefined) {
      where.push('ts < ?');
      params.push(epochMsOf(query.end_time, 'end_time'));
    }
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    return this.read(() => {
      const total = this.cached(`SELECT count(*) FROM events ${clause}`).pluck().get(...params) as number;
      const rows = this.cached(
        `SELECT * FROM events ${clause} ORDER BY ts DESC, id DESC LIMIT ? OFFSET ?`,
      ).all(...params, Math.max(0, query.limit), Math.max(0, query.offset)) as EventRow[];
      return { events: rows.map(eventOf), total };
    });
  }

  private readonly statementCache = new Map<string, Database.Statement>();

  private cached(sql: string): Database.Statement {
    let statement = this.statementCache.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statementCache.set(sql, statement);
    }
    return statement;
  }

  async controlStats(query: StatsQuery): Promise<ControlStatsRow[]> {
    const since = epochMsOf(query.since, 'since');
    return this.read(() => {
      let parts: StatsPart[];
      type RollupPart = { control_id: number; count: number; duration_sum: number };
      let rollups: RollupPart[];
      if (query.agent_name !== undefined) {
        // One agent's window is a contiguous range of events_agent_ts: scan and group it.
        parts = this.s.statsAgentParts.all(query.agent_name, since) as StatsPart[];
        rollups = this.s.rollupAgentParts.all(query.agent_name, since) as RollupPart[];
        if (query.control_id !== undefined) {
          parts = parts.filter((p) => p.control_id === query.control_id);
          rollups = rollups.filter((p) => p.control_id === query.control_id);
        }
      } else {
        parts = [];
        const ids = query.control_id !== undefined ? [query.control_id] : (this.s.statsControlIds.all() as number[]);
        // Each control's window is one range seek of event_rollups_control.
        const rollupIds = query.control_id !== undefined ? [query.control_id] : (this.s.rollupControlIds.all() as number[]);
        rollups = rollupIds.flatMap((id) => this.s.rollupControlParts.all(id, since) as RollupPart[]);
        for (const control_id of ids) {
          for (const outcome of ROW_OUTCOMES) {
            for (const action of ACTIONS) {
              const part = this.s.statsPart.get(control_id, outcome, action, since) as { count: number; duration_sum: number };
              if (part.count > 0) parts.push({ control_id, outcome, action, ...part });
            }
          }
        }
      }
      for (const r of rollups) parts.push({ control_id: r.control_id, outcome: OUTCOME_NON_MATCH, action: '', count: r.count, duration_sum: r.duration_sum });
      return statsRowsOf(parts, (id) => {
        const name = (this.s.controlName.get(id) ?? this.s.rollupControlName.get(id) ?? this.s.eventControlName.get(id)) as
          | string
          | undefined;
        return name ?? '';
      });
    });
  }

  async pruneEvents(before: string): Promise<number> {
    const cutoff = epochMsOf(before, 'before');
    let deleted = 0;
    // Each batch is its own short transaction so ingest keeps going during a large prune.
    for (;;) {
      const changes = this.write(() => this.s.pruneBatch.run(cutoff, this.pruneBatchSize).changes);
      deleted += changes;
      if (changes < this.pruneBatchSize) break;
    }
    // Rollups are few (one row per minute and key), so one statement removes them.
    return deleted + this.write(() => this.s.pruneRollups.run(cutoff).changes);
  }

  // ---- recorded steps (src/recording, src/replay) ----

  async insertRecordedSteps(steps: NewRecordedStep[]): Promise<void> {
    if (steps.length === 0) return;
    const insert = this.cached('INSERT INTO recorded_steps (ts, agent_name, stage, step, decision) VALUES (?, ?, ?, ?, ?)');
    this.write(() => {
      for (const r of steps) insert.run(epochMsOf(r.timestamp, 'timestamp'), r.agent_name, r.stage, r.step_json, r.decision);
    });
  }

  async queryRecordedSteps(query: RecordedStepQuery): Promise<RecordedStepPage> {
    const where = ['id > ?'];
    const params: unknown[] = [query.cursor ?? 0];
    if (query.agent_name !== undefined) {
      where.push('agent_name = ?');
      params.push(query.agent_name);
    }
    if (query.since !== undefined) {
      where.push('ts >= ?');
      params.push(epochMsOf(query.since, 'since'));
    }
    const limit = Math.max(1, query.limit);
    return this.read(() => {
      const rows = this.cached(`SELECT * FROM recorded_steps WHERE ${where.join(' AND ')} ORDER BY id LIMIT ?`).all(...params, limit + 1) as Array<{
        id: number; ts: number; agent_name: string; stage: 'pre' | 'post'; step: string; decision: string;
      }>;
      const page = rows.slice(0, limit);
      return {
        steps: page.map((r) => ({ id: r.id, timestamp: new Date(r.ts).toISOString(), agent_name: r.agent_name, stage: r.stage, step: parseJson(r.step), decision: r.decision })),
        next_cursor: rows.length > limit ? page[page.length - 1]!.id : null,
      };
    });
  }

  async pruneRecordedSteps(before: string): Promise<number> {
    const cutoff = epochMsOf(before, 'before');
    const prune = this.cached('DELETE FROM recorded_steps WHERE id IN (SELECT id FROM recorded_steps WHERE ts < ? LIMIT ?)');
    let deleted = 0;
    for (;;) {
      const changes = this.write(() => prune.run(cutoff, this.pruneBatchSize).changes);
      deleted += changes;
      if (changes < this.pruneBatchSize) return deleted;
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

/** Recorded steps are written by the server itself, but a damaged row must not fail a page. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
