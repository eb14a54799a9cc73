/**
 * The `rate` evaluator: matches when a step would be more than `limit` steps within the
 * sliding `window` for the same key (the agent, or the value at the `key` path). Every
 * step that reaches the check counts, refused ones too: an agent hammering a blocked tool
 * is still hammering. The counts live in the server's counters (see src/counting/).
 */
import { z } from 'zod';
import { ConsistencySchema, countingEvaluator, KeySchema, WindowSchema } from '../counted/config.js';

export const RateConfigSchema = z.strictObject({
  limit: z.number().int().positive().max(1_000_000_000).describe('Most steps allowed within the window; the step after them matches'),
  window: WindowSchema,
  key: KeySchema.optional(),
  consistency: ConsistencySchema,
});
export type RateConfig = z.infer<typeof RateConfigSchema>;

const ONE = () => 1;

export const rateEvaluator = countingEvaluator({
  kind: 'rate',
  description:
    'Counts the steps that reach the control per key (default: the agent) in a sliding window, ' +
    'and matches when a step would be more than limit steps within it.',
  schema: RateConfigSchema,
  max: (config) => config.limit,
  amountOf: () => ONE,
});
