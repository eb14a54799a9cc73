/** Rows of controls and agents as PostgreSQL returns them, and the records they become. */
import type { AgentRecord, ControlRecord } from '../../model/index.js';
import { agentRecordOf, controlRecordOf } from '../records.js';
import { refusal } from '../write-records.js';
import type { PostgresDatabase, WriteTx } from './database.js';

export interface ControlRow {
  control_id: string;
  name: string;
  enabled: boolean;
  data: unknown;
  managed_by: string | null;
  source: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface AgentRow {
  agent_name: string;
  agent_description: string | null;
  agent_version: string | null;
  steps: AgentRecord['steps'];
  metadata: Record<string, unknown> | null;
  labels: Record<string, string>;
  managed_by: string | null;
  created_at: Date;
  updated_at: Date;
}

export function controlOf(row: ControlRow): ControlRecord {
  return controlRecordOf(row, {
    control_id: Number(row.control_id),
    enabled: row.enabled,
    data: row.data,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  });
}

export function agentOf(row: AgentRow): AgentRecord {
  return agentRecordOf(row, {
    steps: row.steps,
    metadata: row.metadata,
    labels: row.labels,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  });
}

/** The agents a control guards: linked, or selected by a policy that binds it. */
export const GUARDED_BY = `SELECT agent_name FROM control_links WHERE control_id = $1
  UNION SELECT m.agent_name FROM policy_controls pc JOIN policy_members m ON m.policy_id = pc.policy_id WHERE pc.control_id = $1
  ORDER BY agent_name`;

/** An agent's links and its policies' controls, the revision, and whether it exists: one statement, one snapshot. */
export const AGENT_CONTROL_SET = `SELECT r.value AS set_revision, EXISTS (SELECT 1 FROM agents WHERE agent_name = $1) AS agent_exists, b.via, c.*
  FROM store_revision r
  LEFT JOIN (
    SELECT l.control_id, 'link' AS via FROM control_links l WHERE l.agent_name = $1
    UNION ALL
    SELECT pc.control_id, 'policy:' || p.name FROM policy_members m JOIN policies p ON p.policy_id = m.policy_id
      JOIN policy_controls pc ON pc.policy_id = m.policy_id WHERE m.agent_name = $1
  ) b ON true
  LEFT JOIN controls c ON c.control_id = b.control_id
  WHERE r.id = 1 ORDER BY c.control_id`;

/** A control's row, locked for the rest of the write transaction; not found is a refusal. */
export async function controlRowForUpdate(database: PostgresDatabase, tx: WriteTx, id: number): Promise<ControlRow> {
  const [row] = await database.rows<ControlRow>(tx, 'SELECT * FROM controls WHERE control_id = $1 FOR UPDATE', [id]);
  if (!row) throw refusal.controlNotFound(id);
  return row;
}

/** The same, by the control's name. */
export async function controlRowByNameForUpdate(database: PostgresDatabase, tx: WriteTx, name: string): Promise<ControlRow> {
  const [row] = await database.rows<ControlRow>(tx, 'SELECT * FROM controls WHERE name = $1 FOR UPDATE', [name]);
  if (!row) throw refusal.namedControlNotFound(name);
  return row;
}

/** The agents linked to a control, by name. */
export async function agentsLinkedTo(database: PostgresDatabase, tx: WriteTx, controlId: number | string): Promise<string[]> {
  const rows = await database.rows<{ agent_name: string }>(tx, 'SELECT agent_name FROM control_links WHERE control_id = $1 ORDER BY agent_name', [controlId]);
  return rows.map((r) => r.agent_name);
}

/** Linked, or members of a policy that binds the control: the agents its writes touch. */
export async function agentsGuardedBy(database: PostgresDatabase, tx: WriteTx, controlId: number | string): Promise<string[]> {
  const rows = await database.rows<{ agent_name: string }>(tx, GUARDED_BY, [controlId]);
  return rows.map((r) => r.agent_name);
}
