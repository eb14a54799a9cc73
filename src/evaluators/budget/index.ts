/**
 * The `budget` evaluator: sums the number at the `amount` path per key within a sliding
 * `window`, and matches when this step's amount would take the sum over `max`. A step
 * that would go over adds nothing (it is refused, so it spends nothing); a missing,
 * non-numeric or negative amount is an evaluator error (`on_error` decides).
 */
import { z } from 'zod';
import { ConsistencySchema, countingEvaluator, KeySchema, PathSchema, WindowSchema } from '../counted/config.js';
import { parseStepPath, readStepPath, type StepPath } from '../counted/paths.js';

export const BudgetConfigSchema = z.strictObject({
  max: z.number().positive().max(1e15).describe('Most the amounts within the window may add up to'),
  window: WindowSchema,
  amount: PathSchema('Selector path of the number each step spends (input.amount_usd, context.cost)'),
  key: KeySchema.optional(),
  consistency: ConsistencySchema,
});
export type BudgetConfig = z.infer<typeof BudgetConfigSchema>;

export const budgetEvaluator = countingEvaluator({
  kind: 'budget',
  description:
    'Sums the number at the amount path per key (default: the agent) in a sliding window, ' +
    'and matches when a step would take the sum over max.',
  schema: BudgetConfigSchema,
  max: (config) => config.max,
  amountOf: ({ amount }) => {
    const amountPath = parseStepPath(amount) as StepPath;
    return (ctx) => {
      const value = readStepPath(amountPath, ctx);
      if (value === undefined) throw new Error(`no amount at ${amount}`);
      if (typeof value !== 'number' || !Number.isFinite(value)) throw new Error(`the amount at ${amount} is not a number`);
      if (value < 0) throw new Error(`the amount at ${amount} is negative`);
      return value;
    };
  },
});
