import { z } from 'zod';
import {
  ControlNameSchema,
  DecisionSchema,
  JsonObjectSchema,
  StageSchema,
  StepTypeSchema,
} from './common.js';
import { SessionLabelListSchema } from './session.js';
import { ApprovalSettingsSchema } from './approval.js';

/** How deep `and`/`or`/`not` trees may nest; deeper trees are rejected when saved. */
export const MAX_CONDITION_DEPTH = 8;

/**
 * How long a regular expression a control supplies (an evaluator pattern, step_name_regex)
 * may be; with the program size limit (evaluators/regex/re2.ts) it bounds what one search
 * costs per byte of text (docs/security.md).
 */
export const MAX_PATTERN_LENGTH = 1000;

export function patternTooLong(length: number): string {
  return `pattern too long: ${length} characters; the limit is ${MAX_PATTERN_LENGTH} (see docs/security.md)`;
}

/** A string holding a regular expression: not empty, at most MAX_PATTERN_LENGTH characters. */
export const PatternTextSchema = z
  .string()
  .min(1, 'pattern must not be empty')
  .max(MAX_PATTERN_LENGTH, { error: (issue) => patternTooLong(typeof issue.input === 'string' ? issue.input.length : MAX_PATTERN_LENGTH + 1) });

const nonEmpty = <T extends z.ZodType>(item: T, what: string) =>
  z.array(item).min(1, `${what} must not be an empty list; leave it out to mean "all"`);

export const ScopeSchema = z.strictObject({
  step_types: nonEmpty(StepTypeSchema, 'step_types').nullable().optional(),
  step_names: nonEmpty(z.string().min(1), 'step_names').optional(),
  step_name_regex: PatternTextSchema.optional(),
  stages: nonEmpty(StageSchema, 'stages').optional(),
  session_labels: SessionLabelListSchema.optional().describe('The control applies only to steps whose session carries all of these labels (docs/sessions.md)'),
  session_labels_absent: SessionLabelListSchema.optional().describe('The control applies only to steps whose session carries none of these labels; a step without a session carries none'),
});
export type Scope = z.infer<typeof ScopeSchema>;

/**
 * Selector paths: `input`, `output`, `name`, `*`, and dotted or indexed paths below
 * `input`, `output` and `context` (for example `input.messages[0].content`).
 */
export const SELECTOR_PATH_PATTERN =
  /^(\*|name|(input|output)((\.[A-Za-z0-9_$-]+)|(\[\d+\]))*|context((\.[A-Za-z0-9_$-]+)|(\[\d+\]))+)$/;

export const SelectorSchema = z.strictObject({
  path: z
    .string()
    .max(512)
    .regex(
      SELECTOR_PATH_PATTERN,
      'path must be one of input, output, name, *, or input.<field>, output.<field>, context.<field> (dots and [index] allowed)',
    ),
  optional: z
    .boolean()
    .optional()
    .describe('true: steps without this field are expected, so finding nothing there is not reported as a missing field (selector_missing)'),
});
export type Selector = z.infer<typeof SelectorSchema>;

export const OnErrorSchema = z.enum(['allow', 'deny']);
export type OnError = z.infer<typeof OnErrorSchema>;

/**
 * The evaluator's config is checked against that evaluator's own JSON Schema by the
 * registry (src/evaluators), not here: the model does not know which evaluators exist.
 */
export const EvaluatorSpecSchema = z.strictObject({
  name: z.string().min(1).max(128),
  config: JsonObjectSchema.default({}),
  metadata: JsonObjectSchema.optional(),
});
export type EvaluatorSpec = z.infer<typeof EvaluatorSpecSchema>;

export const SteeringContextSchema = z.strictObject({
  message: z.string().min(1, 'steering_context.message must not be empty').max(8192),
  required_actions: z.array(z.string().min(1).max(1024)).max(64).optional(),
});
export type SteeringContext = z.infer<typeof SteeringContextSchema>;

export const ActionSchema = z
  .strictObject({
    decision: DecisionSchema,
    steering_context: SteeringContextSchema.optional(),
    message: z
      .string()
      .min(1, 'message must not be empty')
      .max(4096)
      .optional()
      .describe(
        'deny only: what the agent is told when this control denies, instead of the evaluator\'s own message ' +
          '(for example "negated condition did not match" for a not condition)',
      ),
    metadata: JsonObjectSchema.optional(),
    session_labels: SessionLabelListSchema.optional().describe(
      'Labels the step\'s session gains when this control matches; they apply from the session\'s next step (docs/sessions.md)',
    ),
    approval: ApprovalSettingsSchema.optional().describe('ask only: how long the person has to answer (docs/approvals.md)'),
  })
  .superRefine((action, ctx) => {
    if (action.approval !== undefined && action.decision !== 'ask') {
      ctx.addIssue({ code: 'custom', path: ['approval'], message: 'approval is for ask actions: set decision: ask, or remove approval' });
    }
    if (action.message !== undefined && action.decision !== 'deny') {
      ctx.addIssue({
        code: 'custom',
        path: ['message'],
        message: 'message is for deny actions; a steer action\'s guidance goes in steering_context.message',
      });
    }
    if (action.decision === 'steer' && !action.steering_context) {
      ctx.addIssue({
        code: 'custom',
        path: ['steering_context'],
        message: 'a steer action needs steering_context.message: the guidance the agent gets back',
      });
    }
  });
export type Action = z.infer<typeof ActionSchema>;

/** A leaf of a condition tree: one selector and one evaluator. */
export const ConditionLeafSchema = z.strictObject({
  selector: SelectorSchema,
  evaluator: EvaluatorSpecSchema,
});
export type ConditionLeaf = z.infer<typeof ConditionLeafSchema>;

export type Condition =
  | ConditionLeaf
  | { and: Condition[] }
  | { or: Condition[] }
  | { not: Condition };

export const ConditionSchema: z.ZodType<Condition> = z.lazy(() =>
  z.union([
    ConditionLeafSchema,
    z.strictObject({ and: z.array(ConditionSchema).min(1, 'and needs at least one condition') }),
    z.strictObject({ or: z.array(ConditionSchema).min(1, 'or needs at least one condition') }),
    z.strictObject({ not: ConditionSchema }),
  ]),
);

export function conditionDepth(condition: Condition): number {
  if ('and' in condition) return 1 + Math.max(...condition.and.map(conditionDepth));
  if ('or' in condition) return 1 + Math.max(...condition.or.map(conditionDepth));
  if ('not' in condition) return 1 + conditionDepth(condition.not);
  return 1;
}

/**
 * `enforce`: a match takes part in the decision. `shadow`: the control is evaluated and
 * its matches are reported (`shadow_matches`, events with mode shadow, stats) but never
 * change the decision, so a rule's effect on live traffic is measured before it blocks.
 */
export const ControlModeSchema = z.enum(['enforce', 'shadow'], {
  error: () => 'mode must be "enforce" or "shadow"',
});
export type ControlMode = z.infer<typeof ControlModeSchema>;

/** A control's mode; data without one is enforced. */
export function modeOf(data: { mode?: ControlMode | undefined }): ControlMode {
  return data.mode ?? 'enforce';
}

/** Fields shared by the stored control data and the YAML control document. */
const controlBodyShape = {
  description: z.string().max(4096).optional(),
  enabled: z.boolean().default(true),
  /** Absent means `enforce`: data stored before modes existed reads the same. */
  mode: ControlModeSchema.optional(),
  execution: z.enum(['server', 'sdk']).default('server'),
  reveal_match: z
    .boolean()
    .optional()
    .describe(
      'Show the text this control matched in full in answers, events and excerpts. By default it is masked ' +
        '(4111…1111): set true only for rules whose matches are not sensitive (docs/security.md).',
    ),
  scope: ScopeSchema.default({}),
  selector: SelectorSchema.optional(),
  evaluator: EvaluatorSpecSchema.optional(),
  condition: ConditionSchema.optional(),
  action: ActionSchema,
};

type ControlBody = {
  execution?: 'server' | 'sdk' | undefined;
  action?: { decision: string } | undefined;
  selector?: Selector | undefined;
  evaluator?: EvaluatorSpec | undefined;
  condition?: Condition | undefined;
};

/** A control checks either one selector+evaluator pair or a condition tree, never both. */
function refineCheckForm(body: ControlBody, ctx: z.RefinementCtx): void {
  // An approval lives in the server's store and is decided through its API: a control the
  // agent evaluates in its own process could never wait for one, and failing open is not an option.
  if (body.execution === 'sdk' && body.action?.decision === 'ask') {
    ctx.addIssue({
      code: 'custom',
      path: ['execution'],
      message: 'an ask control runs on the server (approvals are stored and decided there): remove execution: sdk or use execution: server',
    });
  }
  if (body.condition) {
    if (body.selector || body.evaluator) {
      ctx.addIssue({
        code: 'custom',
        path: ['condition'],
        message: 'use either selector+evaluator or condition, not both',
      });
    }
    const depth = conditionDepth(body.condition);
    if (depth > MAX_CONDITION_DEPTH) {
      ctx.addIssue({
        code: 'custom',
        path: ['condition'],
        message: `condition is nested ${depth} levels deep; the limit is ${MAX_CONDITION_DEPTH}`,
      });
    }
    return;
  }
  if (!body.selector) {
    ctx.addIssue({ code: 'custom', path: ['selector'], message: 'selector is required (or give a condition)' });
  }
  if (!body.evaluator) {
    ctx.addIssue({ code: 'custom', path: ['evaluator'], message: 'evaluator is required (or give a condition)' });
  }
}

/** Control data: what `PUT /controls/{id}/data` stores (SPEC section 2). */
export const ControlDataSchema = z.strictObject(controlBodyShape).superRefine(refineCheckForm);
export type ControlData = z.infer<typeof ControlDataSchema>;
export type ControlDataInput = z.input<typeof ControlDataSchema>;

/** A `kind: Control` YAML document: the complete control object plus its kind. */
export const ControlDocumentSchema = z
  .strictObject({
    kind: z.literal('Control'),
    name: ControlNameSchema,
    ...controlBodyShape,
  })
  .superRefine(refineCheckForm);
export type ControlDocument = z.infer<typeof ControlDocumentSchema>;

/** Splits a control document into the record name and the stored control data. */
export function controlDataOf(doc: ControlDocument): ControlData {
  const { kind: _kind, name: _name, ...data } = doc;
  return data;
}

/** The control record the server returns. */
export const ControlRecordSchema = z.strictObject({
  control_id: z.number().int().positive(),
  name: z.string(),
  enabled: z.boolean(),
  data: ControlDataSchema.nullable(),
  /** Who owns this control: null when made by hand, else the owner label (GitOps, watch mode). */
  managed_by: z.string().nullable(),
  /** Where the control is defined when it is owned, for example `controls/sql.yaml:3`. */
  source: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ControlRecord = z.infer<typeof ControlRecordSchema>;
