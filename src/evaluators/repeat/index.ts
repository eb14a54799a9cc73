/**
 * The `repeat` evaluator, a loop breaker: matches when the same key occurred more than
 * `max` times in the step's session within the sliding `window`. The default key is the
 * step's name plus its canonical input (the same call made again); `key` is a selector
 * path instead. Counted like `rate` (every step that reaches the check counts, in the
 * server's counters: src/counting/), one counter per agent, session and key. A step
 * without a session is not counted and does not match (docs/sessions.md).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { countingCheck, KeySchema, STATEFUL_REASON, WindowSchema } from '../counted/config.js';
import { parseStepPath, readStepPath, type StepPath } from '../counted/paths.js';
import { parseWindow } from '../../counting/index.js';
import type { EvaluatorDefinition, StepContext } from '../types.js';

export const RepeatConfigSchema = z.strictObject({
  max: z.number().int().positive().max(1_000_000).describe('Most times the same key may occur in a session within the window; the occurrence after them matches'),
  window: WindowSchema,
  key: KeySchema.describe('Selector path whose value is the repeated thing (input.url); default: the step name plus its canonical input').optional(),
});
export type RepeatConfig = z.infer<typeof RepeatConfigSchema>;

const ONE = () => 1;

export const repeatEvaluator: EvaluatorDefinition = {
  name: 'repeat',
  description:
    'Counts how often the same key (default: the step name and its canonical input) occurs in the step\'s session ' +
    'within a sliding window, and matches when it occurs more than max times.',
  configSchema: z.toJSONSchema(RepeatConfigSchema, { io: 'input' }),
  zodSchema: RepeatConfigSchema,
  stateful: STATEFUL_REASON,
  perSession: true,
  compile(raw, _parts, site) {
    const config = RepeatConfigSchema.parse(raw);
    const path = config.key === undefined ? null : (parseStepPath(config.key) as StepPath);
    return countingCheck({
      kind: 'repeat',
      windowText: config.window,
      windowMs: parseWindow(config.window) as number,
      max: config.max,
      key: path,
      consistency: 'exact',
      site,
      amountOf: ONE,
      keyOf: (ctx) => repeatKeyOf(path, ctx),
    });
  },
};

/**
 * The counter key: agent, session and repeated value, digested, so that keys of any
 * length or text cost the same and never quote the step (stats list keys, masked).
 */
function repeatKeyOf(path: StepPath | null, ctx: StepContext): string | null {
  if (ctx.sessionId === undefined) return null;
  const value = path === null ? [ctx.step.name, canonical(ctx.step.input)] : canonical(readStepPath(path, ctx) ?? null);
  const digest = createHash('sha256').update(JSON.stringify([ctx.agentName ?? '', ctx.sessionId, value])).digest('hex');
  return `session:${digest}`;
}

/** JSON with object keys sorted: the same input written in another key order is the same call. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    // defineProperty, not assignment: a `__proto__` key of the step is data, and assigning it
    // would set the copy's prototype instead, which JSON.stringify leaves out, so calls that
    // differ only there would count as the same call.
    for (const k of Object.keys(v).sort()) Object.defineProperty(sorted, k, { value: (v as Record<string, unknown>)[k], enumerable: true, writable: true, configurable: true });
    return sorted;
  }) ?? 'null';
}
