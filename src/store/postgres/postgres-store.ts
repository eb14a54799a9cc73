/**
 * The shared store for several server replicas: PostgreSQL through a pg Pool. Every
 * multi-row change runs BEGIN/COMMIT on one client; every write transaction bumps the
 * revision and sends NOTIFY inside the transaction, so replicas hear of it on commit.
 */
import pg from 'pg';
import type { AgentPatch, AgentRecord, ControlRecord, ObservabilityEvent } from '../../model/index.js';
import {
  batchError,
  dataWithEnabled,
  enabledAfter,
  epochMsOf,
  mergedRollups,
  nowIso,
  OUTCOME_NON_MATCH,
  outcomeOf,
  selectorMissingOf,
  statsRowsOf,
  storedDataOf,
  uniqueSorted,
} from '../records.js';
import type { Migration } from '../sqlite/migrations.js';
import {
  StoreError,
  type ChangeInfo,
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
import { CHANGE_CHANNEL, ChangeListener } from './change-listener.js';
import { mapPgError } from './errors.js';
import { postgresMigrations } from './migrations.js';

export interface PostgresStoreOptions {
  /** The schema holding guardctl's tables; created when missing. Default: the server's search_path. */
  schema?: string;
  /** Most connections the pool opens. */
  maxConnections?: number;
  connectionTimeoutMs?: number;
  /** Rows deleted per statement when pruning. */
  pruneBatchSize?: number;
  /** Events per INSERT statement. */
  insertBatchSize?: number;
  /** Wait before the change listener reconnects after losing its connection. */
  listenerRetryMs?: number;
}

/** NOTIFY payloads are limited to 8000 bytes; beyond a safe size we say "any agent". */
const MAX_NOTIFY_PAYLOAD = 7000;
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

interface ControlRow {
  control_id: string;
  name: string;
  enabled: boolean;
  data: unknown;
  managed_by: string | null;
  source: string | null;
  created_at: Date;
  updated_at: Date;
}

interface AgentRow {
  agent_name: string;
  agent_description: string | null;
  agent_version: string | null;
  steps: AgentRecord['steps'];
  metadata: Record<string, unknown> | null;
  managed_by: string | null;
  created_at: Date;
  updated_at: Date;
}

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
}

function controlOf(row: ControlRow): ControlRecord {
  return {
    control_id: Number(row.control_id),
    name: row.name,
    enabled: row.enabled,
    data: dataWithEnabled(row.data, row.enabled),
    managed_by: row.managed_by,
    source: row.source,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function agentOf(row: AgentRow): AgentRecord {
  return {
    agent_name: row.agent_name,
    agent_description: row.agent_description,
    agent_version: row.agent_version,
    steps: row.steps,
    metadata: row.metadata,
    managed_by: row.managed_by,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function eventOf(row: EventRow): ObservabilityEvent {
  return {
    control_execution_id: row.control_execution_id,
    trace_id: row.trace_id,
    span_id: row.span_id,
    agent_name: row.agent_name,
    control_id: Number(row.control_id),
    control_name: row.control_name,
    check_stage: row.check_stage as ObservabilityEvent['check_stage'],
    applies_to: row.applies_to as ObservabilityEvent['applies_to'],
    action: row.action as ObservabilityEvent['action'],
    matched: row.matched,
    confidence: row.confidence,
    timestamp: row.ts.toISOString(),
    execution_duration_ms: row.execution_duration_ms,
    evaluator_name: row.evaluator_name,
    selector_path: row.selector_path,
    error_message: row.error_message,
    metadata: row.metadata,
    ...selectorMissingOf(row.outcome),
  };
}

/** One write transaction: its client, and what it changed (for the revision and NOTIFY). */
interface WriteTx {
  client: pg.PoolClient;
  changed: boolean;
  agents: Set<string>;
}

/** Applies pending migrations under an advisory lock, so replicas starting together take turns. */
export async function migratePostgres(
  client: pg.ClientBase,
  schema: string | undefined,
  migrations: readonly Migration[] = postgresMigrations,
): Promise<number[]> {
  const lockKey = `guardctl:migrations:${schema ?? ''}`;
  await client.query('SELECT pg_advisory_lock(hashtext($1))', [lockKey]);
  const done: number[] = [];
  try {
    if (schema) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (applied.has(migration.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
      done.push(migration.version);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [lockKey]).catch(() => undefined);
  }
  return done;
}

export class PostgresStore implements Store {
  readonly kind = 'postgres' as const;
  private readonly listener: ChangeListener;
  private readonly pruneBatchSize: number;
  private readonly insertBatchSize: number;

  private constructor(
    private readonly pool: pg.Pool,
    clientConfig: pg.ClientConfig,
    options: PostgresStoreOptions,
  ) {
    this.pruneBatchSize = options.pruneBatchSize ?? 10_000;
    this.insertBatchSize = options.insertBatchSize ?? 5_000;
    this.listener = new ChangeListener(
      { ...clientConfig, application_name: 'guardctl-listener' },
      options.listenerRetryMs ?? 1000,
    );
  }

  /** Connects, migrates under the advisory lock, and returns a ready store. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const schema = options.schema;
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
      throw new TypeError(`schema must be a plain identifier (letters, digits, _): ${schema}`);
    }
    const clientConfig: pg.ClientConfig = {
      connectionString: url,
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
      // Every session sees only this store's schema, so queries need no qualified names.
      ...(schema ? { options: `-c search_path="${schema}"` } : {}),
    };
    const pool = new pg.Pool({ ...clientConfig, max: options.maxConnections ?? 10, application_name: 'guardctl' });
    // An idle client losing its connection must not crash the process; the next query reports it.
    pool.on('error', () => undefined);
    try {
      const client = await pool.connect();
      try {
        await migratePostgres(client, schema);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw mapPgError(error);
    }
    return new PostgresStore(pool, clientConfig, options);
  }

  private async query<R extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<R[]> {
    try {
      return (await this.pool.query<R>(sql, params)).rows;
    } catch (error) {
      throw mapPgError(error);
    }
  }

  /**
   * Runs `fn` in one transaction on one client. When it changed controls, agents or
   * links, the revision grows and NOTIFY is queued before COMMIT (delivered on commit).
   */
  private async write<T>(fn: (tx: WriteTx) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw mapPgError(error);
    }
    const tx: WriteTx = { client, changed: false, agents: new Set() };
    let broken = false;
    try {
      await client.query('BEGIN');
      const value = await fn(tx);
      if (tx.changed) {
        const bumped = await client.query<{ value: string }>('UPDATE store_revision SET value = value + 1 WHERE id = 1 RETURNING value');
        const revision = Number(bumped.rows[0]?.value);
        let agents: string[] | '*' = uniqueSorted(tx.agents);
        if (JSON.stringify(agents).length > MAX_NOTIFY_PAYLOAD) agents = '*';
        await client.query('SELECT pg_notify($1, $2)', [CHANGE_CHANNEL, JSON.stringify({ revision, agents })]);
      }
      await client.query('COMMIT');
      return value;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw mapPgError(error);
    } finally {
      // A client whose ROLLBACK failed is in an unknown state; destroy it instead of reusing it.
      client.release(broken);
    }
  }

  private async rows<R extends pg.QueryResultRow>(tx: WriteTx, sql: string, params: unknown[] = []): Promise<R[]> {
    return (await tx.client.query<R>(sql, params)).rows;
  }

  private async controlRowTx(tx: WriteTx, id: number): Promise<ControlRow> {
    const [row] = await this.rows<ControlRow>(tx, 'SELECT * FROM controls WHERE control_id = $1 FOR UPDATE', [id]);
    if (!row) throw new StoreError('not_found', `control ${id} does not exist`);
    return row;
  }

  private async controlRowByNameTx(tx: WriteTx, name: string): Promise<ControlRow> {
    const [row] = await this.rows<ControlRow>(tx, 'SELECT * FROM controls WHERE name = $1 FOR UPDATE', [name]);
    if (!row) throw new StoreError('not_found', `control "${name}" does not exist`);
    return row;
  }

  private async agentsOfControlTx(tx: WriteTx, controlId: number | string): Promise<string[]> {
    const rows = await this.rows<{ agent_name: string }>(
      tx,
      'SELECT agent_name FROM control_links WHERE control_id = $1 ORDER BY agent_name',
      [controlId],
    );
    return rows.map((r) => r.agent_name);
  }

  private async createControlTx(tx: WriteTx, control: NewControl): Promise<ControlRecord> {
    const now = nowIso();
    // ON CONFLICT DO NOTHING keeps the transaction usable, so a batch can name the failing change.
    const [row] = await this.rows<ControlRow>(
      tx,
      `INSERT INTO controls (name, enabled, data, managed_by, source, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (name) DO NOTHING RETURNING *`,
      [control.name, control.data?.enabled ?? true, storedDataOf(control.data), control.managed_by ?? null, control.source ?? null, now],
    );
    if (!row) throw new StoreError('conflict', `a control named "${control.name}" already exists`);
    tx.changed = true;
    return controlOf(row);
  }

  private async updateControlTx(tx: WriteTx, current: ControlRow, patch: ControlPatch): Promise<ControlRecord> {
    if (patch.name !== undefined && patch.name !== current.name) {
      const taken = await this.rows(tx, 'SELECT 1 FROM controls WHERE name = $1', [patch.name]);
      if (taken.length > 0) throw new StoreError('conflict', `a control named "${patch.name}" already exists`);
    }
    const enabled = enabledAfter(current.enabled, patch);
    const data = patch.data !== undefined ? storedDataOf(patch.data) : current.data === null ? null : JSON.stringify(current.data);
    const [row] = await this.rows<ControlRow>(
      tx,
      `UPDATE controls SET name = $2, enabled = $3, data = $4, managed_by = $5, source = $6, updated_at = $7
       WHERE control_id = $1 RETURNING *`,
      [
        current.control_id,
        patch.name ?? current.name,
        enabled,
        data,
        patch.managed_by !== undefined ? patch.managed_by : current.managed_by,
        patch.source !== undefined ? patch.source : current.source,
        nowIso(),
      ],
    );
    tx.changed = true;
    for (const agent of await this.agentsOfControlTx(tx, current.control_id)) tx.agents.add(agent);
    return controlOf(row!);
  }

  private async deleteControlTx(tx: WriteTx, id: number | string): Promise<string[]> {
    const agents = await this.agentsOfControlTx(tx, id);
    await tx.client.query('DELETE FROM controls WHERE control_id = $1', [id]);
    tx.changed = true;
    for (const agent of agents) tx.agents.add(agent);
    return agents;
  }

  private async upsertAgentTx(tx: WriteTx, agent: NewAgent): Promise<{ agent: AgentRecord; created: boolean }> {
    const now = nowIso();
    // xmax = 0 only for a freshly inserted row: the one-statement way to tell insert from update.
    const [row] = await this.rows<AgentRow & { inserted: boolean }>(
      tx,
      `INSERT INTO agents AS a (agent_name, agent_description, agent_version, steps, metadata, managed_by, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
       ON CONFLICT (agent_name) DO UPDATE SET agent_description = EXCLUDED.agent_description,
         agent_version = EXCLUDED.agent_version, steps = EXCLUDED.steps, metadata = EXCLUDED.metadata,
         managed_by = CASE WHEN $8 THEN EXCLUDED.managed_by ELSE a.managed_by END, updated_at = EXCLUDED.updated_at
       RETURNING *, (xmax = 0) AS inserted`,
      [
        agent.agent_name,
        agent.agent_description ?? null,
        agent.agent_version ?? null,
        JSON.stringify(agent.steps ?? []),
        agent.metadata == null ? null : JSON.stringify(agent.metadata),
        agent.managed_by ?? null,
        now,
        // A registration that does not say who owns the agent keeps the owner it had.
        agent.managed_by !== undefined,
      ],
    );
    tx.changed = true;
    tx.agents.add(agent.agent_name);
    const { inserted, ...stored } = row!;
    return { agent: agentOf(stored), created: inserted };
  }

  private async linkTx(tx: WriteTx, agentName: string, controlId: number | string): Promise<boolean> {
    const agent = await this.rows(tx, 'SELECT 1 FROM agents WHERE agent_name = $1', [agentName]);
    if (agent.length === 0) throw new StoreError('not_found', `agent "${agentName}" does not exist`);
    const control = await this.rows(tx, 'SELECT 1 FROM controls WHERE control_id = $1', [controlId]);
    if (control.length === 0) throw new StoreError('not_found', `control ${controlId} does not exist`);
    const result = await tx.client.query(
      'INSERT INTO control_links (agent_name, control_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [agentName, controlId],
    );
    const made = (result.rowCount ?? 0) > 0;
    if (made) {
      tx.changed = true;
      tx.agents.add(agentName);
    }
    return made;
  }

  private async unlinkTx(tx: WriteTx, agentName: string, controlId: number | string): Promise<boolean> {
    const result = await tx.client.query('DELETE FROM control_links WHERE agent_name = $1 AND control_id = $2', [
      agentName,
      controlId,
    ]);
    const removed = (result.rowCount ?? 0) > 0;
    if (removed) {
      tx.changed = true;
      tx.agents.add(agentName);
    }
    return removed;
  }

  async createControl(control: NewControl): Promise<ControlRecord> {
    return this.write((tx) => this.createControlTx(tx, control));
  }

  async getControl(id: number): Promise<ControlRecord | null> {
    const [row] = await this.query<ControlRow>('SELECT * FROM controls WHERE control_id = $1', [id]);
    return row ? controlOf(row) : null;
  }

  async getControlByName(name: string): Promise<ControlRecord | null> {
    const [row] = await this.query<ControlRow>('SELECT * FROM controls WHERE name = $1', [name]);
    return row ? controlOf(row) : null;
  }

  async listControls(page: { cursor?: number | undefined; limit: number }): Promise<ControlPage> {
    const limit = Math.max(1, Math.floor(page.limit));
    const [rows, count] = await Promise.all([
      this.query<ControlRow>('SELECT * FROM controls WHERE control_id > $1 ORDER BY control_id LIMIT $2', [
        page.cursor ?? 0,
        limit + 1,
      ]),
      this.query<{ total: string }>('SELECT count(*) AS total FROM controls'),
    ]);
    const has_more = rows.length > limit;
    const controls = rows.slice(0, limit).map(controlOf);
    return {
      controls,
      has_more,
      next_cursor: has_more ? (controls.at(-1)?.control_id ?? null) : null,
      total: Number(count[0]?.total ?? 0),
    };
  }

  async listAllControls(): Promise<ControlRecord[]> {
    return (await this.query<ControlRow>('SELECT * FROM controls ORDER BY control_id')).map(controlOf);
  }

  async updateControl(id: number, patch: ControlPatch): Promise<ControlRecord> {
    return this.write(async (tx) => this.updateControlTx(tx, await this.controlRowTx(tx, id), patch));
  }

  async deleteControl(id: number): Promise<{ unlinked_agents: string[] }> {
    return this.write(async (tx) => {
      await this.controlRowTx(tx, id);
      return { unlinked_agents: await this.deleteControlTx(tx, id) };
    });
  }

  async getAgent(name: string): Promise<AgentRecord | null> {
    const [row] = await this.query<AgentRow>('SELECT * FROM agents WHERE agent_name = $1', [name]);
    return row ? agentOf(row) : null;
  }

  async listAgents(): Promise<AgentRecord[]> {
    return (await this.query<AgentRow>('SELECT * FROM agents ORDER BY agent_name')).map(agentOf);
  }

  async upsertAgent(agent: NewAgent): Promise<{ agent: AgentRecord; created: boolean }> {
    return this.write((tx) => this.upsertAgentTx(tx, agent));
  }

  async patchAgent(name: string, patch: AgentPatch): Promise<AgentRecord> {
    return this.write(async (tx) => {
      const [current] = await this.rows<AgentRow>(tx, 'SELECT * FROM agents WHERE agent_name = $1 FOR UPDATE', [name]);
      if (!current) throw new StoreError('not_found', `agent "${name}" does not exist`);
      const metadata = patch.metadata !== undefined ? patch.metadata : current.metadata;
      const [row] = await this.rows<AgentRow>(
        tx,
        `UPDATE agents SET agent_description = $2, agent_version = $3, steps = $4, metadata = $5, updated_at = $6
         WHERE agent_name = $1 RETURNING *`,
        [
          name,
          patch.agent_description !== undefined ? patch.agent_description : current.agent_description,
          patch.agent_version !== undefined ? patch.agent_version : current.agent_version,
          JSON.stringify(patch.steps ?? current.steps),
          metadata === null ? null : JSON.stringify(metadata),
          nowIso(),
        ],
      );
      tx.changed = true;
      tx.agents.add(name);
      return agentOf(row!);
    });
  }

  async linkControl(agentName: string, controlId: number): Promise<boolean> {
    return this.write((tx) => this.linkTx(tx, agentName, controlId));
  }

  async unlinkControl(agentName: string, controlId: number): Promise<boolean> {
    return this.write((tx) => this.unlinkTx(tx, agentName, controlId));
  }

  async listAgentControls(agentName: string): Promise<ControlRecord[]> {
    const rows = await this.query<ControlRow>(
      `SELECT c.* FROM control_links l JOIN controls c ON c.control_id = l.control_id
       WHERE l.agent_name = $1 ORDER BY c.control_id`,
      [agentName],
    );
    return rows.map(controlOf);
  }

  async agentsOfControl(controlId: number): Promise<string[]> {
    const rows = await this.query<{ agent_name: string }>(
      'SELECT agent_name FROM control_links WHERE control_id = $1 ORDER BY agent_name',
      [controlId],
    );
    return rows.map((r) => r.agent_name);
  }

  async listLinks(): Promise<Link[]> {
    const rows = await this.query<{ agent_name: string; control_id: string }>(
      'SELECT agent_name, control_id FROM control_links ORDER BY agent_name, control_id',
    );
    return rows.map((r) => ({ agent_name: r.agent_name, control_id: Number(r.control_id) }));
  }

  async applyChanges(changes: StoreChange[]): Promise<{ touched_agents: string[] }> {
    return this.write(async (tx) => {
      const touched: string[] = [];
      for (const [index, change] of changes.entries()) {
        try {
          touched.push(...(await this.applyOne(tx, change)));
        } catch (error) {
          throw batchError(mapPgError(error), change, index);
        }
      }
      return { touched_agents: uniqueSorted(touched) };
    });
  }

  private async applyOne(tx: WriteTx, change: StoreChange): Promise<string[]> {
    switch (change.op) {
      case 'create_control':
        await this.createControlTx(tx, change.control);
        return [];
      case 'update_control': {
        const row = await this.controlRowByNameTx(tx, change.name);
        await this.updateControlTx(tx, row, change.patch);
        return this.agentsOfControlTx(tx, row.control_id);
      }
      case 'delete_control':
        return this.deleteControlTx(tx, (await this.controlRowByNameTx(tx, change.name)).control_id);
      case 'upsert_agent':
        await this.upsertAgentTx(tx, change.agent);
        return [change.agent.agent_name];
      case 'link':
        await this.linkTx(tx, change.agent_name, (await this.controlRowByNameTx(tx, change.control_name)).control_id);
        return [change.agent_name];
      case 'unlink':
        await this.unlinkTx(tx, change.agent_name, (await this.controlRowByNameTx(tx, change.control_name)).control_id);
        return [change.agent_name];
    }
  }

  async revision(): Promise<number> {
    const [row] = await this.query<{ value: string }>('SELECT value FROM store_revision WHERE id = 1');
    return Number(row?.value ?? 0);
  }

  async insertEvents(events: ObservabilityEvent[]): Promise<void> {
    if (events.length === 0) return;
    const insertBatch = async (client: pg.Pool | pg.PoolClient, batch: ObservabilityEvent[]) => {
      // One statement per batch: each column travels as one array parameter, unnested server-side.
      const columns: unknown[][] = Array.from({ length: 18 }, () => new Array<unknown>(batch.length));
      batch.forEach((e, i) => {
        const values = [
          e.control_execution_id,
          e.trace_id,
          e.span_id,
          e.agent_name,
          e.control_id,
          e.control_name,
          e.check_stage,
          e.applies_to,
          e.action,
          e.matched,
          outcomeOf(e),
          e.confidence,
          new Date(epochMsOf(e.timestamp, 'timestamp')).toISOString(),
          e.execution_duration_ms,
          e.evaluator_name,
          e.selector_path,
          e.error_message,
          e.metadata === null ? null : JSON.stringify(e.metadata),
        ];
        values.forEach((v, c) => (columns[c]![i] = v));
      });
      await client.query(
        `INSERT INTO events (control_execution_id, trace_id, span_id, agent_name, control_id, control_name,
           check_stage, applies_to, action, matched, outcome, confidence, ts, execution_duration_ms,
           evaluator_name, selector_path, error_message, metadata)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[],
           $8::text[], $9::text[], $10::boolean[], $11::smallint[], $12::float8[], $13::timestamptz[], $14::float8[],
           $15::text[], $16::text[], $17::text[], $18::jsonb[])`,
        columns,
      );
    };
    if (events.length <= this.insertBatchSize) {
      try {
        await insertBatch(this.pool, events);
      } catch (error) {
        throw mapPgError(error);
      }
      return;
    }
    await this.write(async (tx) => {
      for (let i = 0; i < events.length; i += this.insertBatchSize) {
        await insertBatch(tx.client, events.slice(i, i + this.insertBatchSize));
      }
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
        cmp(a.evaluator_name, b.evaluator_name),
    );
    await this.query(
      `INSERT INTO event_rollups AS r (bucket, agent_name, control_id, control_name, check_stage, applies_to,
         evaluator_name, count, total_duration_ms)
       SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[],
         $7::text[], $8::bigint[], $9::float8[])
       ON CONFLICT (bucket, agent_name, control_id, control_name, check_stage, applies_to, evaluator_name)
       DO UPDATE SET count = r.count + excluded.count, total_duration_ms = r.total_duration_ms + excluded.total_duration_ms`,
      [
        rows.map((r) => new Date(r.bucket_ms).toISOString()),
        rows.map((r) => r.agent_name),
        rows.map((r) => r.control_id),
        rows.map((r) => r.control_name),
        rows.map((r) => r.check_stage),
        rows.map((r) => r.applies_to),
        rows.map((r) => r.evaluator_name),
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
    if (query.start_time !== undefined) {
      add((n) => `ts >= ${n}`, new Date(epochMsOf(query.start_time, 'start_time')).toISOString());
    }
    if (query.end_time !== undefined) {
      add((n) => `ts < ${n}`, new Date(epochMsOf(query.end_time, 'end_time')).toISOString());
    }
    const clause = where.length > 0 ? `WHERE ${where.join(' AND ')}` : '';
    const n = params.length;
    const [rows, count] = await Promise.all([
      this.query<EventRow>(`SELECT * FROM events ${clause} ORDER BY ts DESC, id DESC LIMIT $${n + 1} OFFSET $${n + 2}`, [
        ...params,
        Math.max(0, query.limit),
        Math.max(0, query.offset),
      ]),
      this.query<{ total: string }>(`SELECT count(*) AS total FROM events ${clause}`, params),
    ]);
    return { events: rows.map(eventOf), total: Number(count[0]?.total ?? 0) };
  }

  async controlStats(query: StatsQuery): Promise<ControlStatsRow[]> {
    const params: unknown[] = [new Date(epochMsOf(query.since, 'since')).toISOString()];
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
      this.query<{ control_id: string; outcome: number; action: string; count: string; duration_sum: number }>(
        `SELECT control_id, outcome, action, count(*) AS count, sum(execution_duration_ms) AS duration_sum
         FROM events WHERE ts >= $1 AND outcome <> ${OUTCOME_NON_MATCH}${filter} GROUP BY control_id, outcome, action`,
        params,
      ),
      this.query<{ control_id: string; count: string; duration_sum: number }>(
        `SELECT control_id, sum(count) AS count, sum(total_duration_ms) AS duration_sum
         FROM event_rollups WHERE bucket >= $1${filter} GROUP BY control_id`,
        params,
      ),
    ]);
    const all = [
      ...parts.map((p) => ({
        control_id: Number(p.control_id),
        outcome: p.outcome,
        action: p.action,
        count: Number(p.count),
        duration_sum: p.duration_sum,
      })),
      ...rollups.map((r) => ({
        control_id: Number(r.control_id),
        outcome: OUTCOME_NON_MATCH,
        action: '',
        count: Number(r.count),
        duration_sum: r.duration_sum,
      })),
    ];
    const ids = [...new Set(all.map((p) => p.control_id))];
    const names = new Map<number, string>();
    if (ids.length > 0) {
      const rows = await this.query<{ control_id: string; name: string }>(
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
    }
    return statsRowsOf(all, (id) => names.get(id) ?? '');
  }

  async pruneEvents(before: string): Promise<number> {
    const cutoff = new Date(epochMsOf(before, 'before')).toISOString();
    let deleted = 0;
    // Batches keep each transaction (and the locks and WAL it holds) small.
    for (;;) {
      const rows = await this.query<{ n: string }>(
        `WITH gone AS (
           DELETE FROM events WHERE id IN (SELECT id FROM events WHERE ts < $1 LIMIT $2) RETURNING 1)
         SELECT count(*) AS n FROM gone`,
        [cutoff, this.pruneBatchSize],
      );
      const n = Number(rows[0]?.n ?? 0);
      deleted += n;
      if (n < this.pruneBatchSize) break;
    }
    // Rollups are few (one row per minute and key), so one statement removes them.
    const [gone] = await this.query<{ n: string }>(
      'WITH gone AS (DELETE FROM event_rollups WHERE bucket < $1 RETURNING 1) SELECT count(*) AS n FROM gone',
      [cutoff],
    );
    return deleted + Number(gone?.n ?? 0);
  }

  // ---- recorded steps (src/recording, src/replay) ----

  async insertRecordedSteps(steps: NewRecordedStep[]): Promise<void> {
    for (let start = 0; start < steps.length; start += this.insertBatchSize) {
      const batch = steps.slice(start, start + this.insertBatchSize);
      // One statement per batch: each column is one array parameter, unnested server-side.
      await this.query(
        `INSERT INTO recorded_steps (ts, agent_name, stage, step, decision)
         SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::jsonb[], $5::text[])`,
        [
          batch.map((r) => new Date(epochMsOf(r.timestamp, 'timestamp')).toISOString()),
          batch.map((r) => r.agent_name),
          batch.map((r) => r.stage),
          batch.map((r) => r.step_json),
          batch.map((r) => r.decision),
        ],
      );
    }
  }

  async queryRecordedSteps(query: RecordedStepQuery): Promise<RecordedStepPage> {
    const where = ['id > $1'];
    const params: unknown[] = [query.cursor ?? 0];
    if (query.agent_name !== undefined) {
      params.push(query.agent_name);
      where.push(`agent_name = $${params.length}`);
    }
    if (query.since !== undefined) {
      params.push(new Date(epochMsOf(query.since, 'since')).toISOString());
      where.push(`ts >= $${params.length}`);
    }
    const limit = Math.max(1, query.limit);
    params.push(limit + 1);
    const rows = await this.query<{ id: string; ts: Date; agent_name: string; stage: 'pre' | 'post'; step: unknown; decision: string }>(
      `SELECT * FROM recorded_steps WHERE ${where.join(' AND ')} ORDER BY id LIMIT $${params.length}`,
      params,
    );
    const page = rows.slice(0, limit);
    return {
      steps: page.map((r) => ({ id: Number(r.id), timestamp: r.ts.toISOString(), agent_name: r.agent_name, stage: r.stage, step: r.step, decision: r.decision })),
      next_cursor: rows.length > limit ? Number(page[page.length - 1]!.id) : null,
    };
  }

  async pruneRecordedSteps(before: string): Promise<number> {
    const cutoff = new Date(epochMsOf(before, 'before')).toISOString();
    let deleted = 0;
    for (;;) {
      const rows = await this.query<{ n: string }>(
        `WITH gone AS (
           DELETE FROM recorded_steps WHERE id IN (SELECT id FROM recorded_steps WHERE ts < $1 LIMIT $2) RETURNING 1)
         SELECT count(*) AS n FROM gone`,
        [cutoff, this.pruneBatchSize],
      );
      const n = Number(rows[0]?.n ?? 0);
      deleted += n;
      if (n < this.pruneBatchSize) return deleted;
    }
  }

  /**
   * Calls `listener` after any instance commits a write to controls, agents or links.
   * `agents` lists the agents whose controls changed; null means "any" (after the
   * listener reconnected, or when the list was too long to send).
   */
  onChange(listener: (info: ChangeInfo) => void): () => void {
    return this.listener.subscribe(listener);
  }

  /** Resolves once this store's change listener is subscribed (after the first onChange). */
  listening(): Promise<void> {
    return this.listener.listening();
  }

  /** The server process id of the change listener's session, or null when not connected. */
  listenerBackendPid(): number | null {
    return this.listener.backendPid();
  }

  async close(): Promise<void> {
    await this.listener.close();
    await this.pool.end().catch(() => undefined);
  }
}

/** Code-point order, the same in every locale (for the lock order of rollup upserts). */
function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
