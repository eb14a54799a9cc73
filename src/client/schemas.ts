/**
 * Response schemas of the REST API, for the answers the model does not already describe.
 * Records and results reuse the model's schemas (the single source of truth); the small
 * envelopes around them are defined here. Envelopes are loose objects so the server may
 * add fields without breaking older clients, while the fields a client relies on are
 * checked: a 2xx answer missing them is a ResponseShapeError, never a silent success.
 */
import { z } from 'zod';
import {
  AgentRecordSchema,
  ChangeEntrySchema,
  ControlDataSchema,
  ControlRecordSchema,
  EvaluationResultSchema,
  JsonObjectSchema,
  ObservabilityEventSchema,
  ShadowReportSchema,
} from '../model/index.js';

export const HealthSchema = z.looseObject({ status: z.string(), version: z.string() });
export type Health = z.infer<typeof HealthSchema>;

export const EvaluatorInfoSchema = z.looseObject({
  name: z.string(),
  description: z.string().optional(),
  config_schema: JsonObjectSchema.optional(),
  /** Absent from servers that do not say: not known. */
  counts: z.boolean().optional(),
});
export type EvaluatorInfo = z.infer<typeof EvaluatorInfoSchema>;
export const EvaluatorListSchema = z.looseObject({ evaluators: z.array(EvaluatorInfoSchema) });

export const PaginationSchema = z.looseObject({
  limit: z.number().int(),
  next_cursor: z.number().int().nullable(),
  has_more: z.boolean(),
  total: z.number().int(),
});
export const ControlListSchema = z.looseObject({
  controls: z.array(ControlRecordSchema),
  pagination: PaginationSchema,
});
export type ControlList = z.infer<typeof ControlListSchema>;

/** `PUT /controls`: the id always; the server may add the whole record. */
export const CreatedControlSchema = z.looseObject({ control_id: z.number().int().positive() });
export type CreatedControl = z.infer<typeof CreatedControlSchema>;

export const ControlDataEnvelopeSchema = z.looseObject({ data: ControlDataSchema });

/** Acknowledgements whose content a client does not need beyond "it is a JSON object". */
export const AckSchema = z.looseObject({});
export type Ack = z.infer<typeof AckSchema>;

export const ValidateResultSchema = z.looseObject({ success: z.literal(true) });

export const DeletedControlSchema = z.looseObject({
  deleted: z.boolean().optional(),
  unlinked_agents: z.array(z.string()).optional(),
});

/** `POST /changes`: how many changes were applied and whose controls changed. */
export const AppliedChangesSchema = z.looseObject({
  applied: z.number().int(),
  touched_agents: z.array(z.string()),
  /** The store revision after the batch (the expected_revision of the next one). */
  revision: z.number().int().optional(),
});

/** `GET /changes/revision`. */
export const RevisionSchema = z.looseObject({ revision: z.number().int().nonnegative() });
export type AppliedChanges = z.infer<typeof AppliedChangesSchema>;

export const AgentListSchema = z.looseObject({ agents: z.array(AgentRecordSchema.loose()) });

/** `GET /agents/{name}`: the agent record plus the ids and names of its controls. */
export const AgentDetailSchema = AgentRecordSchema.extend({
  controls: z.array(z.looseObject({ control_id: z.number().int(), name: z.string(), sources: z.array(z.string()).optional() })).optional(),
}).loose();
export type AgentDetail = z.infer<typeof AgentDetailSchema>;

export const AgentChangeSchema = z.looseObject({
  field: z.string(),
  before: z.unknown(),
  after: z.unknown(),
});
export const InitAgentResultSchema = z.looseObject({
  agent: AgentRecordSchema.loose(),
  created: z.boolean(),
  changes: z.array(AgentChangeSchema),
});
export type InitAgentResult = z.infer<typeof InitAgentResultSchema>;

export const AgentControlsSchema = z.looseObject({
  agent_name: z.string(),
  controls: z.array(ControlRecordSchema),
  /** The store revision these controls were read at; absent from servers that predate it. */
  set_revision: z.number().int().nullable().optional(),
  /** By control id: `link` and/or `policy:<name>`; absent from servers that predate policies. */
  sources: z.record(z.string(), z.array(z.string())).optional(),
});
export type AgentControls = z.infer<typeof AgentControlsSchema>;

export const LinkResultSchema = z.looseObject({ linked: z.boolean() });
export const UnlinkResultSchema = z.looseObject({ unlinked: z.boolean() });
export const DeleteAgentResultSchema = z.looseObject({ deleted: z.literal(true), agent_name: z.string(), unlinked_controls: z.array(z.number().int()) });

export { EvaluationResultSchema };

export const IngestResultSchema = z.looseObject({
  received: z.number().int(),
  enqueued: z.number().int(),
  dropped: z.number().int(),
});
export type IngestResult = z.infer<typeof IngestResultSchema>;

export const EventQueryResultSchema = z.looseObject({
  events: z.array(ObservabilityEventSchema),
  total: z.number().int().optional(),
});
export type EventQueryResult = z.infer<typeof EventQueryResultSchema>;

const ControlStatsRowSchema = z.looseObject({
  control_id: z.number().int(),
  control_name: z.string(),
  executions: z.number(),
  matches: z.number(),
  non_matches: z.number(),
  errors: z.number(),
  /** Absent from servers that predate it. */
  selector_missing: z.number().optional(),
  actions: z.record(z.string(), z.number()),
  avg_duration_ms: z.number(),
  // Shadow figures; absent from servers without shadow mode.
  shadow_executions: z.number().optional(),
  shadow_matches: z.number().optional(),
  would_deny: z.number().optional(),
  would_steer: z.number().optional(),
});
export type ControlStats = z.infer<typeof ControlStatsRowSchema>;

/** The current use of a rate or budget control for one key (docs/evaluators.md). */
export const CounterUseSchema = z.looseObject({
  control_id: z.number().int(),
  control_name: z.string(),
  key: z.string(),
  kind: z.string(),
  window_ms: z.number(),
  used: z.number(),
  limit: z.number(),
  ratio: z.number(),
});
export type CounterUse = z.infer<typeof CounterUseSchema>;

/** `GET /observability/stats`: totals and one row per control. */
export const AgentStatsSchema = z.looseObject({
  agent_name: z.string().nullable().optional(),
  time_range: z.string(),
  totals: z.looseObject({
    executions: z.number(),
    matches: z.number(),
    non_matches: z.number(),
    errors: z.number(),
    selector_missing: z.number().optional(),
    actions: z.record(z.string(), z.number()),
  }),
  controls: z.array(ControlStatsRowSchema),
  /** Rate and budget use; absent from servers without them, null when they cannot be read. */
  counters: z.array(CounterUseSchema).nullable().optional(),
});
export type AgentStats = z.infer<typeof AgentStatsSchema>;

/** `GET /observability/stats/controls/{control_id}`. */
export const ControlStatsSchema = z.looseObject({
  control_id: z.number().int(),
  control_name: z.string(),
  agent_name: z.string().nullable(),
  time_range: z.string(),
  stats: ControlStatsRowSchema,
});
export type ControlStatsResult = z.infer<typeof ControlStatsSchema>;

/** Steps are kept unparsed (`unknown`): replay checks each one and skips what no longer fits. */
export const RecordingPageSchema = z.object({
  // session_id: absent from servers before sessions.
  steps: z.array(z.object({ id: z.number(), timestamp: z.string(), agent_name: z.string(), stage: z.string(), step: z.unknown(), decision: z.string(), session_id: z.string().nullable().optional() })),
  next_cursor: z.number().nullable(),
  /** Whether the server records steps (GUARD_RECORD_STEPS). */
  recording: z.boolean().optional(),
});
export type RecordingPage = z.infer<typeof RecordingPageSchema>;

const ChangePaginationSchema = z.looseObject({
  limit: z.number().int(),
  next_cursor: z.number().int().nullable(),
  has_more: z.boolean(),
});

/** `GET /controls/{id}/history`: the control's revisions, newest first. */
export const ControlHistorySchema = z.looseObject({
  control_id: z.number().int(),
  entries: z.array(ChangeEntrySchema),
  pagination: ChangePaginationSchema,
});
export type ControlHistory = z.infer<typeof ControlHistorySchema>;

/** `GET /audit`: every write, newest first. */
export const AuditPageSchema = z.looseObject({
  entries: z.array(ChangeEntrySchema),
  pagination: ChangePaginationSchema,
});
export type AuditPage = z.infer<typeof AuditPageSchema>;

/** `POST /controls/{id}/restore`. */
export const RestoreResultSchema = z.looseObject({
  restored: z.boolean(),
  recreated: z.boolean(),
  revision: z.number().int(),
  control: ControlRecordSchema,
});
export type RestoreResult = z.infer<typeof RestoreResultSchema>;

export { ShadowReportSchema };
