/**
 * History and audit in PostgreSQL: the change_log table. A write transaction collects its
 * entries (WriteTx.entries) and database.ts stores them under the revision it bumped,
 * before COMMIT, with one statement; this module holds that statement and the queries.
 */
import type pg from 'pg';
import type { ChangeEntry, WriteOrigin } from '../../model/index.js';
import { entryOf, type AuditQuery, type ChangePage, type ChangePageQuery, type HistoryLimits, type HistoryStore, type NewChangeEntry } from '../history.js';
import { isoOf } from '../records.js';

interface EntryRow {
  id: string;
  revision: string;
  ts: Date;
  actor: string;
  source: string;
  kind: string;
  op: string;
  control_id: string | null;
  control_name: string | null;
  agent_name: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  note: string | null;
  policy_id: string | null;
}

/** Stores a transaction's entries, in order, under the revision it bumped; one statement. */
export async function insertEntries(client: pg.PoolClient, revision: number, origin: WriteOrigin, entries: readonly NewChangeEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const json = (value: object | null) => (value === null ? null : JSON.stringify(value));
  await client.query(
    // ORDER BY the position: ids follow the order the transaction wrote in.
    `INSERT INTO change_log (revision, ts, actor, source, kind, op, control_id, control_name, agent_name, before, after, note, policy_id)
     SELECT $1, now(), $2, $3, e.kind, e.op, e.control_id, e.control_name, e.agent_name, e.before, e.after, e.note, e.policy_id
     FROM unnest($4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[], $9::jsonb[], $10::jsonb[], $11::text[], $12::bigint[])
       WITH ORDINALITY AS e(kind, op, control_id, control_name, agent_name, before, after, note, policy_id, n)
     ORDER BY e.n`,
    [
      revision,
      origin.actor,
      origin.source,
      entries.map((e) => e.kind),
      entries.map((e) => e.op),
      entries.map((e) => e.control_id),
      entries.map((e) => e.control_name),
      entries.map((e) => e.agent_name),
      entries.map((e) => json(e.before)),
      entries.map((e) => json(e.after)),
      entries.map((e) => e.note),
      entries.map((e) => e.policy_id ?? null),
    ],
  );
}

const rowToEntry = (row: EntryRow): ChangeEntry => entryOf(row);

export class PostgresHistory implements HistoryStore {
  /** The store's database (database.ts), by the one method read here: it imports this file. */
  constructor(private readonly database: { query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<R[]> }) {}

  /** Every entry of one control, oldest first (what restore decides from), on the transaction's client. */
  async entriesOf(client: pg.PoolClient, controlId: number): Promise<ChangeEntry[]> {
    const { rows } = await client.query<EntryRow>('SELECT * FROM change_log WHERE control_id = $1 ORDER BY id', [controlId]);
    return rows.map(rowToEntry);
  }

  async pruneHistory(limits: HistoryLimits): Promise<number> {
    const count = async (sql: string, params: unknown[]) =>
      Number((await this.database.query<{ n: string }>(`WITH gone AS (${sql} RETURNING 1) SELECT count(*) AS n FROM gone`, params))[0]?.n ?? 0);
    const byAge = await count('DELETE FROM change_log WHERE ts < $1', [isoOf(limits.before, 'before')]);
    const byCount = await count(
      'DELETE FROM change_log WHERE id < (SELECT id FROM change_log ORDER BY id DESC OFFSET $1 LIMIT 1)',
      [Math.max(0, limits.maxEntries - 1)],
    );
    return byAge + byCount;
  }

  async policyHistory(policyId: number, page: ChangePageQuery): Promise<ChangePage> {
    return this.page(['policy_id = $1'], [policyId], page);
  }

  async controlHistory(controlId: number, page: ChangePageQuery): Promise<ChangePage> {
    return this.page(['control_id = $1'], [controlId], page);
  }

  async auditLog(query: AuditQuery): Promise<ChangePage> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (query.since !== undefined) {
      params.push(isoOf(query.since, 'since'));
      where.push(`ts >= $${params.length}`);
    }
    if (query.actor !== undefined) {
      params.push(query.actor);
      where.push(`actor = $${params.length}`);
    }
    return this.page(where, params, query);
  }

  /** Newest first, `limit` entries with an id below the cursor; one more read tells whether a next page exists. */
  private async page(where: string[], params: unknown[], page: ChangePageQuery): Promise<ChangePage> {
    const values = [...params];
    const clauses = [...where];
    if (page.cursor !== undefined) {
      values.push(page.cursor);
      clauses.push(`id < $${values.length}`);
    }
    const limit = Math.max(1, Math.floor(page.limit));
    values.push(limit + 1);
    const rows = await this.database.query<EntryRow>(
      `SELECT * FROM change_log ${clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : ''} ORDER BY id DESC LIMIT $${values.length}`,
      values,
    );
    const entries = rows.slice(0, limit).map(rowToEntry);
    return { entries, next_cursor: rows.length > limit ? (entries.at(-1)?.id ?? null) : null };
  }
}
