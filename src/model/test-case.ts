import { z } from 'zod';
import { AgentNameSchema, ControlNameSchema, StageSchema } from './common.js';
import { LabelsSchema } from './labels.js';
import { StepSchema } from './step.js';

/** What a decision test expects of one step. */
export const TestExpectationSchema = z.strictObject({
  decision: z.enum(['allow', 'deny', 'steer', 'ask']),
  /** Controls that must match. */
  matched: z.array(ControlNameSchema).optional(),
  /** Controls that must not match. */
  not_matched: z.array(ControlNameSchema).optional(),
});
export type TestExpectation = z.infer<typeof TestExpectationSchema>;

/** One step of a multi-step case: evaluated in order, in the case's one session. */
export const TestStepSchema = z.strictObject({
  stage: StageSchema,
  step: StepSchema,
  expect: TestExpectationSchema,
});
export type TestStep = z.infer<typeof TestStepSchema>;

/**
 * A case is one step (`stage`, `step`, `expect`) or several (`steps`), which run in order
 * in one fresh session: labels a step adds decide the steps after it (docs/sessions.md).
 */
export const TestCaseSchema = z
  .strictObject({
    name: z.string().min(1).max(256),
    /** Overrides the document's agent for this case. */
    agent: AgentNameSchema.optional(),
    /**
     * Instead of a name: an agent with these labels and no links of its own, guarded by
     * every policy that selects it (what an agent registering later with them would get).
     */
    agent_labels: LabelsSchema.optional(),
    stage: StageSchema.optional(),
    step: StepSchema.optional(),
    expect: TestExpectationSchema.optional(),
    steps: z.array(TestStepSchema).min(1, 'steps must not be empty').max(100, 'at most 100 steps per case').optional(),
  })
  .superRefine((c, ctx) => {
    const single = c.stage !== undefined || c.step !== undefined || c.expect !== undefined;
    if (c.steps !== undefined && single) {
      ctx.addIssue({ code: 'custom', path: ['steps'], message: 'a case has either stage, step and expect, or steps, not both' });
      return;
    }
    if (c.steps !== undefined) return;
    for (const key of ['stage', 'step', 'expect'] as const) {
      if (c[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `${key} is required (or give steps)` });
    }
  });
export type TestCase = z.infer<typeof TestCaseSchema>;

/**
 * A `kind: Test` YAML document: decision tests kept beside the controls and run offline
 * by `guardctl test` with the same engine as the server.
 */
export const TestDocumentSchema = z.strictObject({
  kind: z.literal('Test'),
  name: z.string().min(1).max(256),
  description: z.string().max(4096).optional(),
  /** The agent whose controls (links and policies) the cases run against. */
  agent: AgentNameSchema.optional(),
  /** Instead of `agent`: an unnamed agent with these labels, guarded by the policies selecting it. */
  agent_labels: LabelsSchema.optional(),
  cases: z.array(TestCaseSchema).min(1, 'a test document needs at least one case'),
});
export type TestDocument = z.infer<typeof TestDocumentSchema>;
