import { z } from 'zod';
import { AgentNameSchema, ControlNameSchema, StageSchema } from './common.js';
import { LabelsSchema } from './labels.js';
import { StepSchema } from './step.js';

/** What a decision test expects of one step. */
export const TestExpectationSchema = z.strictObject({
  decision: z.enum(['allow', 'deny', 'steer']),
  /** Controls that must match. */
  matched: z.array(ControlNameSchema).optional(),
  /** Controls that must not match. */
  not_matched: z.array(ControlNameSchema).optional(),
});
export type TestExpectation = z.infer<typeof TestExpectationSchema>;

export const TestCaseSchema = z.strictObject({
  name: z.string().min(1).max(256),
  /** Overrides the document's agent for this case. */
  agent: AgentNameSchema.optional(),
  /**
   * Instead of a name: an agent with these labels and no links of its own, guarded by
   * every policy that selects it (what an agent registering later with them would get).
   */
  agent_labels: LabelsSchema.optional(),
  stage: StageSchema,
  step: StepSchema,
  expect: TestExpectationSchema,
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
