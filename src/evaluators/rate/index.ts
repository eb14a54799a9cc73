/**
 * The `rate` evaluator: matches when a step would be more than `limit` steps within the
 * sliding `window` for the same key (the agent, or the value at the `key` path). Every
 * step that reaches the check counts, refused ones too: an agent hammering a blocked tool
 * is still hammering. The counts live in the server's counters (see ../counting/).
 */
import { z } from 'zod';
import type { EvaluatorDefinition } from '../types.js';
import { ConsistencySchema, countingCheck, KeySchema, STATEFUL_REASON, WindowSchema } from '../counting/config.js';
import { parseStepPath, type StepPath } from '../counting/paths.js';
import { parseWindow } from '../counting/window.js';

export const RateConfigSchema = z.strictObject({
  limit: z.number().int().positive().max(1_000_000_000).describe('Most steps allowed within the window; the step after them matches'),
  window: WindowSchema,
  key: KeySchema.optional(),
  consistency: ConsistencySchema,
});
export type RateConfig = z.infer<typeof RateConfigSchema>;

export const rateEvaluator: EvaluatorDefinition = {
  name: 'rate',
  description:
    'Counts the steps that reach the control per key (default: the agent) in a sliding window, ' +
    'and matches when a step would be more than limit steps within it.',
  configSchema: z.toJSONSchema(RateConfigSchema, { io: 'input' }),
  zodSchema: RateConfigSchema,
  stateful: STATEFUL_REASON,
  compile(config, _parts, site) {
    const { limit, window, key, consistency } = RateConfigSchema.parse(config);
    return countingCheck({
      kind: 'rate',
      windowText: window,
      windowMs: parseWindow(window) as number,
      max: limit,
      key: key === undefined ? null : (parseStepPath(key) as StepPath),
      consistency,
      site,
      amountOf: () => 1,
    });
  },
};
