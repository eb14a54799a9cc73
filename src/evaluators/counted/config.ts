/**
 * PURE: what the rate and budget evaluators share: their config fields, the key a step
 * counts under, the check that asks the server's counters, and the definition around it.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { parseWindow, type CountAnswer, type CounterKind, type CountRequest } from '../../counting/index.js';
import type { CompileSite, EvaluatorDefinition, EvaluatorOutcome, StepContext } from '../types.js';
import { parseStepPath, readStepPath, type StepPath } from './paths.js';

/** Longer key values are counted under a digest, so a 10 KB key costs what a short one does. */
export const MAX_KEY_LENGTH = 128;

/** The key of steps whose key path finds nothing: they share one counter. */
export const NO_KEY = '(none)';

export const WindowSchema = z
  .string()
  .describe('Sliding window: a whole number and a unit s, m, h or d (10s, 1m, 1h, 24h, 7d); at most 30d')
  .superRefine((text, ctx) => {
    const parsed = parseWindow(text);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
  });

export const PathSchema = (what: string) =>
  z
    .string()
    .describe(what)
    .superRefine((text, ctx) => {
      const parsed = parseStepPath(text);
      if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
    });

export const KeySchema = PathSchema('Selector path whose value keys the counter (context.user_id, input.account); default: the agent name');

export const ConsistencySchema = z
  .enum(['exact', 'approximate'])
  .default('exact')
  .describe('Across PostgreSQL replicas: exact (each step checked and counted atomically under the lock of its key) or approximate (counted in memory, added in batches; see docs/evaluators.md)');

/**
 * The key a step counts under: the key path's value as text, or the agent. A long text is
 * counted under its digest; so is one holding a NUL or a lone surrogate, which PostgreSQL's
 * text cannot hold as it is (a NUL is refused, a lone surrogate becomes U+FFFD, merging
 * keys), so that every store counts the same keys. Those are digested from their UTF-16
 * code units, which tell all of them apart.
 */
export function keyOf(path: StepPath | null, ctx: StepContext): string {
  if (path === null) return ctx.agentName ?? NO_KEY;
  const value = readStepPath(path, ctx);
  if (value === undefined || value === null) return NO_KEY;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text.includes('\u0000') || !text.isWellFormed()) return `sha256:${createHash('sha256').update(Buffer.from(text, 'utf16le')).digest('hex')}`;
  if (text.length <= MAX_KEY_LENGTH) return text;
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

export interface CountingCheckSpec {
  kind: CounterKind;
  windowText: string;
  windowMs: number;
  max: number;
  key: StepPath | null;
  consistency: 'exact' | 'approximate';
  site: CompileSite | undefined;
  /** The amount this step adds (rate: 1); throws for a step it cannot count. */
  amountOf: (ctx: StepContext) => number;
  /** The key, where it is not keyOf's (repeat: per session); null: the step is not counted. */
  keyOf?: (ctx: StepContext) => string | null;
}

/** The counter a control (or one leaf of a condition tree) counts in. */
export function counterOf(site: CompileSite | undefined): { control_id: number; counter: string } {
  const controlId = site?.controlId ?? 0;
  const at = site?.at ?? 'evaluator';
  return { control_id: controlId, counter: at === 'evaluator' ? String(controlId) : `${controlId}/${at.replace(/\.evaluator$/, '')}` };
}

const UNDER: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });

/** The check: counts the step and matches when it is over the limit. */
export function countingCheck(spec: CountingCheckSpec) {
  const { control_id, counter } = counterOf(spec.site);
  const unit = UNITS[spec.kind];
  const keyOfStep = spec.keyOf ?? ((ctx: StepContext) => keyOf(spec.key, ctx));
  const outcomeOf = (answer: CountAnswer): EvaluatorOutcome => {
    if (!answer.over) return UNDER;
    return {
      matched: true,
      confidence: 1,
      message: `${spec.kind} limit reached: ${formatAmount(answer.used)} ${unit} of ${formatAmount(spec.max)} in ${spec.windowText}`,
      metadata: { used: answer.used, limit: spec.max, window: spec.windowText },
    };
  };
  return (_value: unknown, _memo?: unknown, ctx?: StepContext): EvaluatorOutcome | Promise<EvaluatorOutcome> => {
    if (ctx?.counters === undefined) {
      throw new Error(`the ${spec.kind} evaluator counts steps on the server; no counters here`);
    }
    const key = keyOfStep(ctx);
    if (key === null) return UNDER;
    const request: CountRequest = {
      control_id,
      counter,
      key,
      window_ms: spec.windowMs,
      amount: spec.amountOf(ctx),
      max: spec.max,
      always: spec.kind !== 'budget',
      kind: spec.kind,
      consistency: spec.consistency,
    };
    const answer = ctx.counters.count(request);
    return answer instanceof Promise ? answer.then(outcomeOf) : outcomeOf(answer);
  };
}

const UNITS: Record<CounterKind, string> = { rate: 'steps', budget: 'spent', repeat: 'repeats' };

function formatAmount(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(2);
}

export const STATEFUL_REASON =
  'counts steps across agents and replicas on the server; an agent process cannot see the others\' counts, so it cannot run with execution: sdk';

/** The config fields every counting evaluator has. */
interface CountingConfig {
  window: string;
  key?: string | undefined;
  consistency: 'exact' | 'approximate';
}

export interface CountingEvaluatorSpec<C extends CountingConfig> {
  kind: 'rate' | 'budget';
  description: string;
  schema: z.ZodType<C, unknown>;
  /** The limit the config sets. */
  max(config: C): number;
  /** What a step adds, for this config (built once per control). */
  amountOf(config: C): (ctx: StepContext) => number;
}

/** A rate or budget evaluator: its schema, and a compile that counts through countingCheck. */
export function countingEvaluator<C extends CountingConfig>(spec: CountingEvaluatorSpec<C>): EvaluatorDefinition {
  return {
    name: spec.kind,
    description: spec.description,
    configSchema: z.toJSONSchema(spec.schema, { io: 'input' }),
    zodSchema: spec.schema,
    stateful: STATEFUL_REASON,
    compile(raw, _parts, site) {
      const config = spec.schema.parse(raw);
      return countingCheck({
        kind: spec.kind,
        windowText: config.window,
        windowMs: parseWindow(config.window) as number,
        max: spec.max(config),
        key: config.key === undefined ? null : (parseStepPath(config.key) as StepPath),
        consistency: config.consistency,
        site,
        amountOf: spec.amountOf(config),
      });
    },
  };
}
