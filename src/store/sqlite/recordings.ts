/** Recorded steps in SQLite (src/recording writes them, src/replay reads them). */
import { epochMsOf, type RecordedStepColumns } from '../records.js';
import type { NewRecordedStep, RecordedStepPage, RecordedStepQuery, RecordingStore } from '../types.js';
import type { SqliteDatabase } from './database.js';

/** SQLite returns integers as numbers and the step as its JSON text. */
type RecordedStepRow = RecordedStepColumns<number, number, string>;

export class SqliteRecordings implements RecordingStore {
  constructor(private readonly database: SqliteDatabase) {}

  async insertRecordedSteps(steps: NewRecordedStep[]): Promise<void> {
    if (steps.length === 0) return;
    const insert = this.database.cached('INSERT INTO recorded_steps (ts, agent_name, stage, step, decision, session_id) VALUES (?, ?, ?, ?, ?, ?)');
    this.database.write(() => {
      for (const r of steps) insert.run(epochMsOf(r.timestamp, 'timestamp'), r.agent_name, r.stage, r.step_json, r.decision, r.session_id ?? null);
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
    return this.database.read(() => {
      const sql = `SELECT * FROM recorded_steps WHERE ${where.join(' AND ')} ORDER BY id LIMIT ?`;
      const rows = this.database.cached(sql).all(...params, limit + 1) as RecordedStepRow[];
      const page = rows.slice(0, limit);
      return {
        steps: page.map((r) => ({ id: r.id, timestamp: new Date(r.ts).toISOString(), agent_name: r.agent_name, stage: r.stage, step: parseStoredJson(r.step), decision: r.decision, session_id: r.session_id })),
        next_cursor: rows.length > limit ? page[page.length - 1]!.id : null,
      };
    });
  }

  async pruneRecordedSteps(before: string): Promise<number> {
    const prune = this.database.cached('DELETE FROM recorded_steps WHERE id IN (SELECT id FROM recorded_steps WHERE ts < ? LIMIT ?)');
    return this.database.pruneInBatches(prune, epochMsOf(before, 'before'));
  }
}

/** Recorded steps are written by the server itself, but a damaged row must not fail a page. */
function parseStoredJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
