import { z } from 'zod';
import { StageSchema, StepTypeSchema } from './common.js';
import { SteeringContextSchema } from './control.js';
import { ApprovalRecordSchema, ApprovalStatusSchema } from './approval.js';

/** One matched control in a stream summary. */
const SummaryMatchSchema = z.strictObject({
  control_id: z.number().int(),
  control_name: z.string(),
  action: z.enum(['allow', 'deny', 'steer', 'ask', 'warn', 'log']),
  message: z.string().nullable(),
  steering_context: SteeringContextSchema.nullable(),
  /** The selected value the control looked at, truncated to 200 characters. */
  excerpt: z.string().nullable(),
});
export type SummaryMatch = z.infer<typeof SummaryMatchSchema>;

/**
 * What the live stream (`GET /api/v1/observability/events/stream`, Server-Sent Events)
 * sends for each evaluated step: `event: evaluation` with this object as `data`.
 * Dashboards draw from it; it is a summary, not the stored per-control events.
 */
export const EvaluationSummarySchema = z.strictObject({
  /** Unique per evaluation; also the SSE `id`. */
  id: z.string(),
  timestamp: z.string(),
  trace_id: z.string(),
  agent_name: z.string(),
  step_name: z.string(),
  step_type: StepTypeSchema,
  stage: StageSchema,
  decision: z.enum(['allow', 'deny', 'steer', 'ask']),
  /** The step's session (the request's `session_id`); null when it had none (absent from older servers). */
  session_id: z.string().nullable().optional(),
  /**
   * The session's labels once this step had added its own; null when the agent has no
   * session-aware control (then the server keeps no labels for it).
   */
  session_labels: z.array(z.string()).nullable().optional(),
  /** Engine time for the whole step, in milliseconds. */
  duration_ms: z.number(),
  /** How many controls were evaluated. */
  evaluated: z.number().int(),
  matches: z.array(SummaryMatchSchema),
  /** Matches of shadow controls: shown marked, never part of the decision. */
  shadow_matches: z.array(SummaryMatchSchema).default([]),
  errors: z.array(z.strictObject({ control_id: z.number().int(), control_name: z.string(), message: z.string() })),
  /** The approval an ask control bound the step to: pending (decision ask), approved (allow) or denied or expired (deny). */
  approval: z.strictObject({ id: z.string(), status: ApprovalStatusSchema }).optional(),
});
export type EvaluationSummary = z.infer<typeof EvaluationSummarySchema>;

/**
 * `event: approval`: an approval was asked, approved, denied, used (the approved step ran)
 * or expired. The approval's step is masked as the API shows it.
 */
export const ApprovalNoticeSchema = z.strictObject({
  timestamp: z.string(),
  event: z.enum(['asked', 'approved', 'denied', 'expired', 'used']),
  approval: ApprovalRecordSchema,
});
export type ApprovalNotice = z.infer<typeof ApprovalNoticeSchema>;

/** `event: reload`: the watched controls directory was reloaded (or failed to). */
export const ReloadNoticeSchema = z.strictObject({
  timestamp: z.string(),
  result: z.enum(['success', 'failure']),
  revision: z.string().nullable(),
  errors: z.array(z.string()),
});
export type ReloadNotice = z.infer<typeof ReloadNoticeSchema>;
