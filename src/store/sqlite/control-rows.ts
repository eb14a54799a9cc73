/** Rows of controls and agents as SQLite returns them, and the records they become. */
import type { AgentRecord, ControlRecord } from '../../model/index.js';
import { agentRecordOf, controlRecordOf } from '../records.js';

export interface ControlRow {
  control_id: number;
  name: string;
  enabled: number;
  data: string | null;
  managed_by: string | null;
  source: string | null;
  created_at: string;
  updated_at: string;
}

export interface AgentRow {
  agent_name: string;
  agent_description: string | null;
  agent_version: string | null;
  steps: string;
  metadata: string | null;
  labels: string;
  managed_by: string | null;
  created_at: string;
  updated_at: string;
}

export function controlOf(row: ControlRow): ControlRecord {
  return controlRecordOf(row, {
    control_id: row.control_id,
    enabled: row.enabled === 1,
    data: row.data,
    created_at: row.created_at,
    updated_at: row.updated_at,
  });
}

export function agentOf(row: AgentRow): AgentRecord {
  return agentRecordOf(row, {
    steps: JSON.parse(row.steps) as AgentRecord['steps'],
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    labels: JSON.parse(row.labels) as Record<string, string>,
    created_at: row.created_at,
    updated_at: row.updated_at,
  });
}
