/** Recorded steps in PostgreSQL (src/recording writes them, src/replay reads them). */
import { isoOf, type RecordedStepColumns } from '../records.js';
import type { NewRecordedStep, RecordedStepPage, RecordedStepQuery, RecordingStore } from '../types.js';
import type { PostgresDatabase } from './database.js';

/** pg returns BIGINT ids as strings, times as Dates and JSONB parsed. */
type RecordedStepRow = RecordedStepColumns<string, Date, unknown>;

export class PostgresRecordings implements RecordingStore {
  constructor(private readonly database: PostgresDatabase) {}

  async insertRecordedSteps(steps: NewRecordedStep[]): Promise<void> {
    const size = this.database.insertBatchSize;
    for (let start = 0; start < steps.length; start += size) {
      const batch = steps.slice(start, start + size);
      // One statement per batch: each column is one array parameter, unnested server-side.
      await this.database.query(
        `INSERT INTO recorded_steps (ts, agent_name, stage, step, decision, session_id)
         SELECT * FROM unnest($1::timestamptz[], $2::text[], $3::text[], $4::jsonb[], $5::text[], $6::text[])`,
        [
          batch.map((r) => isoOf(r.timestamp, 'timestamp')),
          batch.map((r) => r.agent_name),
          batch.map((r) => r.stage),
          batch.map((r) => r.step_json),
          batch.map((r) => r.decision),
          batch.map((r) => r.session_id ?? null),
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
      params.push(isoOf(query.since, 'since'));
      where.push(`ts >= $${params.length}`);
    }
    const limit = Math.max(1, query.limit);
    params.push(limit + 1);
    const rows = await this.database.query<RecordedStepRow>(
      `SELECT * FROM recorded_steps WHERE ${where.join(' AND ')} ORDER BY id LIMIT $${params.length}`,
      params,
    );
    const page = rows.slice(0, limit);
    return {
      steps: page.map((r) => ({ id: Number(r.id), timestamp: r.ts.toISOString(), agent_name: r.agent_name, stage: r.stage, step: r.step, decision: r.decision, session_id: r.session_id })),
      next_cursor: rows.length > limit ? Number(page[page.length - 1]!.id) : null,
    };
  }

  async pruneRecordedSteps(before: string): Promise<number> {
    return this.database.pruneInBatches(
      'DELETE FROM recorded_steps WHERE id IN (SELECT id FROM recorded_steps WHERE ts < $1 LIMIT $2) RETURNING 1',
      isoOf(before, 'before'),
    );
  }
}
