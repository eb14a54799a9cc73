/** What the REST client's methods take as request bodies and parameters (client.ts). */
import type { ChangeBody, StepType } from '../model/index.js';

/** `PUT /controls`: the same fields as a create_control change's control. */
export type NewControlBody = Extract<ChangeBody, { op: 'create_control' }>['control'];

/** `PATCH /controls/{id}`: the fields of an update_control change's patch, but the data (`PUT .../data` sets it). */
export type ControlPatchBody = Omit<Extract<ChangeBody, { op: 'update_control' }>['patch'], 'data'>;

/** `AgentRegistration` as callers write it: defaults (steps, conflict_mode) may be left out. */
export type AgentRegistrationBody = {
  agent_name: string;
  labels?: Record<string, string>;
  agent_description?: string;
  agent_version?: string;
  steps?: Array<{
    type: StepType;
    name: string;
    description?: string;
    input_schema?: Record<string, unknown>;
    output_schema?: Record<string, unknown>;
    metadata?: Record<string, unknown>;
  }>;
  conflict_mode?: 'strict' | 'overwrite';
  metadata?: Record<string, unknown>;
};

/** The filter of `POST /observability/events/query`. */
export interface EventQueryBody {
  agent_name?: string;
  control_ids?: number[];
  actions?: string[];
  matched?: boolean;
  stages?: string[];
  trace_id?: string;
  session_id?: string; // only the events of this session's steps
  mode?: 'enforce' | 'shadow';
  start_time?: string;
  end_time?: string;
  limit?: number;
  offset?: number;
}

export interface StatsParams {
  agent_name?: string;
  /** `1m 5m 15m 1h 24h 7d 30d` */
  time_range?: string;
}
