/** Rows of controls and agents as PostgreSQL returns them, and the records they become. */
import type { AgentRecord, ControlRecord } from '../../model/index.js';
import { agentRecordOf, controlRecordOf } from '../records.js';

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
