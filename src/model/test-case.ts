import { z } from 'zod';
import { AgentNameSchema, ControlNameSchema, StageSchema } from './common.js';
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

export const TestCaseSchema = z.strictObject({
  name: z.string().min(1).max(256),
  /** Overrides the document's agent for this case. */
  agent: AgentNameSchema.optional(),
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
  /** The agent whose linked controls the cases run against. */
  agent: AgentNameSchema,
  cases: z.array(TestCaseSchema).min(1, 'a test document needs at least one case'),
});
export type TestDocument = z.infer<typeof TestDocumentSchema>;
