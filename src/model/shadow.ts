import { z } from 'zod';
import { DecisionSchema, StageSchema, StepTypeSchema } from './common.js';

/**
 * A step a shadow control matched, as the report shows it: the step redacted the way
 * recordings are (secret field names) and, beyond that, every value the control looked
 * at replaced by a marker, so the report never repeats what the control guards.
 */
export const ShadowExampleSchema = z.strictObject({
  timestamp: z.string(),
  agent_name: z.string(),
  stage: StageSchema,
  step_type: StepTypeSchema,
  step_name: z.string(),
  trace_id: z.string(),
  /** The redacted step, or null when it was too large to keep. */
  step: z.unknown(),
});
export type ShadowExample = z.infer<typeof ShadowExampleSchema>;

/** One shadow control's measured effect over the report's window. */
export const ShadowControlReportSchema = z.strictObject({
  control_id: z.number().int(),
  control_name: z.string(),
  /** What the control would do once enforced. */
  action: DecisionSchema,
  /** Steps it evaluated while in shadow mode. */
  evaluated: z.number().int(),
  /** Of those, the ones it matched, by what it would have done. */
  matches: z.number().int(),
  would_deny: z.number().int(),
  would_steer: z.number().int(),
  errors: z.number().int(),
  examples: z.array(ShadowExampleSchema),
});
export type ShadowControlReport = z.infer<typeof ShadowControlReportSchema>;

/** `GET /api/v1/shadow-report`: every control in shadow mode now, with its figures. */
export const ShadowReportSchema = z.strictObject({
  /** ISO time the window starts at. */
  since: z.string(),
  agent_name: z.string().nullable(),
  controls: z.array(ShadowControlReportSchema),
});
export type ShadowReport = z.infer<typeof ShadowReportSchema>;
