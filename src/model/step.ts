import { z } from 'zod';
import {
  AgentNameSchema,
  DecisionSchema,
  JsonObjectSchema,
  StageSchema,
  StepTypeSchema,
} from './common.js';
import { SteeringContextSchema } from './control.js';
import { SessionIdSchema, SessionResultSchema } from './session.js';
import { ApprovalRefSchema } from './approval.js';

/**
 * The object a control looks at: one tool or model call. A step made with no argument (a
 * tool that takes none) has the input null; a request that leaves `input` out means the
 * same, so clients that drop an undefined field are still checked.
 */
export const StepSchema = z.strictObject({
  type: StepTypeSchema,
  name: z.string().min(1).max(256),
  input: z.unknown().default(null),
  output: z.unknown().optional(),
  context: JsonObjectSchema.optional(),
});
export type Step = z.infer<typeof StepSchema>;

/** The body of `POST /api/v1/evaluation`. */
export const EvaluationRequestSchema = z.strictObject({
  agent_name: AgentNameSchema,
  stage: StageSchema,
  step: StepSchema,
  /** Steps of one agent with the same session_id share session labels (docs/sessions.md). */
  session_id: SessionIdSchema.optional(),
});
export type EvaluationRequest = z.infer<typeof EvaluationRequestSchema>;

export const ControlResultSchema = z.strictObject({
  matched: z.boolean(),
  confidence: z.number().min(0).max(1),
  message: z.string().nullable(),
  metadata: JsonObjectSchema.nullable(),
});
export type ControlResult = z.infer<typeof ControlResultSchema>;

/** One control's verdict on a step (a match, a non-match or an error). */
export const ControlMatchSchema = z.strictObject({
  control_id: z.number().int(),
  control_name: z.string(),
  action: DecisionSchema,
  result: ControlResultSchema,
  steering_context: SteeringContextSchema.optional(),
  /** Set when the evaluator failed; on_error decided whether the action fired. */
  error: z.string().optional(),
  /**
   * Set on a non-match whose selector found nothing in a step the control is scoped to
   * (a misnamed field, for instance): the control could not look, which is not the same
   * as looking and finding nothing wrong.
   */
  selector_missing: z.literal(true).optional(),
  /** The labels this match added to the step's session (action.session_labels); on a shadow match, the labels it would have added. */
  session_labels_added: z.array(z.string()).optional(),
});
export type ControlMatch = z.infer<typeof ControlMatchSchema>;

/** The result of evaluating one step at one stage. */
export const EvaluationResultSchema = z.strictObject({
  is_safe: z.boolean(),
  /** `ask`: a person must approve this exact step first (`approval` says which question). */
  decision: z.enum(['allow', 'deny', 'steer', 'ask']),
  confidence: z.number().min(0).max(1),
  steering_context: SteeringContextSchema.nullable(),
  matches: z.array(ControlMatchSchema),
  errors: z.array(ControlMatchSchema),
  non_matches: z.array(ControlMatchSchema),
  /**
   * Matches of `mode: shadow` controls: what they would have done. They never change
   * `decision`, `is_safe` or `steering_context`. Absent in answers of servers without
   * shadow mode, so it defaults to empty.
   */
  shadow_matches: z.array(ControlMatchSchema).default([]),
  /** The step's session, when the request names one and the agent has session-aware controls. */
  session: SessionResultSchema.optional(),
  /**
   * Set when an `ask` control matched: the approval of this exact step. Pending with
   * decision ask; approved with decision allow (this submission used it); denied or
   * expired with decision deny.
   */
  approval: ApprovalRefSchema.optional(),
});
export type EvaluationResult = z.infer<typeof EvaluationResultSchema>;
