import type { z } from 'zod';
import type { Counters } from '../counting/types.js';
import type { JsonObject } from '../model/index.js';

export type { CountAnswer, CountRequest, Counters } from '../counting/types.js';

/** What an evaluator says about the selected value. */
export interface EvaluatorOutcome {
  matched: boolean;
  /** 0..1; 1 for deterministic evaluators. */
  confidence: number;
  /** What the evaluator concluded, without the text it matched (that goes in `found`). */
  message?: string | null;
  metadata?: JsonObject | null;
  /**
   * The text the evaluator matched, as it appears in the value (a regex's match, the list
   * entries found). Never put it in `message` or `metadata`: the engine adds it to the
   * message masked (`4111…1111`), masks it in the metadata and the excerpt, and shows it
   * in full only for a control with reveal_match (engine/present.ts, docs/security.md).
   */
  found?: readonly string[] | null;
}

/**
 * A compiled check: built once per control when the control set is compiled, then
 * called per step. Synchronous evaluators return the outcome directly (the fast path);
 * evaluators that need I/O (the vendor scorer) return a promise.
 * Throwing (or rejecting) is an evaluator error: the control's on_error decides.
 */
export type CompiledCheck = (
  value: unknown,
  memo?: ValueMemo,
  step?: StepContext,
) => EvaluatorOutcome | Promise<EvaluatorOutcome>;

/**
 * The step a check runs for, as a stateful evaluator (rate, budget) needs it: the whole
 * step (to read its key and amount paths), the agent's name and the counters the server
 * provides. Stateless evaluators ignore it.
 */
export interface StepContext {
  readonly step: { readonly type: string; readonly name: string; readonly input: unknown; readonly output?: unknown; readonly context?: unknown };
  /** The agent the step belongs to; undefined where the caller does not say (plain engine use). */
  readonly agentName: string | undefined;
  /** Where counts live; undefined where none were provided (stateful checks then fail). */
  readonly counters: Counters | undefined;
  /** The step's session (EvaluationRequest.session_id); undefined for a step without one. */
  readonly sessionId?: string | undefined;
}

/** Where a compiled evaluator sits: the control, and the config's place in its data. */
export interface CompileSite {
  readonly controlId: number;
  /** `evaluator`, or for example `condition.and[1].evaluator`. */
  readonly at: string;
  /**
   * The path of the selector whose value the check receives (`input`, `input.query`, `*`
   * for the whole step); undefined where the caller does not say (validation, tests).
   * Lets a message name a place in the step rather than in the selected value.
   */
  readonly selectorPath?: string;
}

/**
 * What a check may declare about itself, about the selected value's text as the step's memo
 * gives it (`ValueMemo.text`):
 * - `scanPattern`, a regular expression (RE2 syntax) that must match that text for the
 *   check to match;
 * - `scanPrefilter`, literals of which the text must contain one for the check to match
 *   (null: none known).
 * Where a declaration rules a match out, the check must answer a plain non-match (matched
 * false, confidence 1, no message or metadata). The engine scans the checks of one field
 * together (engine/scan-groups.ts) and answers that non-match for every check the scan
 * rules out, without calling it.
 */
export interface ScanHint {
  readonly scanPattern?: string;
  readonly scanPrefilter?: Prefilter | null;
}

/**
 * A cache that lives for one step's evaluation, handed to every check of that step: when
 * several controls select the same object, it is serialised (and lowercased) once.
 * Checks may ignore it; it never outlives the step, so it never serves stale text.
 */
export interface ValueMemo {
  /** What `textOf` gives, computed once per selected value. */
  text(value: unknown): string | undefined;
  /** `text.toLowerCase()`, computed once per text. */
  lower(text: string): string;
  /**
   * The text as UTF-8 bytes, computed once per text. RE2 converts a JavaScript string on
   * every call (several times the cost of the search itself for a fresh string); handing
   * it bytes converted once per step saves that for every regex control of the step.
   */
  utf8(text: string): Buffer;
}

/**
 * Lets a compile step reuse what an earlier one built from the same key (a regex program
 * from its pattern), so that controls repeating a config hold one copy of it. What is
 * shared must be immutable, or safe to use from the checks of several controls at once.
 * Each evaluator has its own. Compiling without one (tests, validation) shares nothing.
 */
export interface PartCache {
  /** The part an earlier call built for `key` while it is still in use, else `make()`. */
  share<T extends object>(key: string, make: () => T): T;
}

/** Where the registry finds each evaluator's PartCache (one per evaluator, so keys never meet). */
export interface PartCaches {
  forEvaluator(name: string): PartCache;
}

export interface EvaluatorDefinition {
  /** The name controls use in `evaluator.name`, for example `regex`. */
  name: string;
  description: string;
  /** JSON Schema (draft 2020-12) of `evaluator.config`, without the shared `on_error` key. */
  configSchema: JsonObject;
  /**
   * Optional: the zod schema `configSchema` was generated from. Built-ins set it so that
   * configs are checked with zod's messages; plugins give plain JSON Schema only.
   */
  zodSchema?: z.ZodType;
  /**
   * Checks a config beyond what its JSON Schema can say (for example that a pattern compiles)
   * and builds the check. Throws ConfigError with a field path relative to `config`.
   * Called when a control is saved or compiled, never per step. `parts`, when given, lets
   * controls with the same config share what compiling it built.
   */
  compile(config: JsonObject, parts?: PartCache, site?: CompileSite): CompiledCheck;
  /**
   * Set by evaluators that count across steps (rate, budget): they need the server's
   * counters, so a control using one cannot run with `execution: sdk` (an agent's process
   * cannot see other agents' counts). The text says why, for the validation error.
   */
  stateful?: string;
  /**
   * Set by evaluators that count per session (repeat): a control using one is
   * session-aware, so the server keeps its agent's sessions (docs/sessions.md).
   */
  perSession?: true;
}

/** A config problem found while compiling; `field` is relative to the evaluator config. */
export class ConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** What a plugin module exports: `export default [definition, ...]` or `export const evaluators = [...]`. */
export type EvaluatorPlugin = EvaluatorDefinition[];

/** Strings one of which every match contains (see regex/literals.ts): a cheap test before the evaluator runs. */
export interface Prefilter {
  /** Every match contains one of these; lowercased when `folded`. */
  readonly literals: readonly string[];
  /** Compare with the text lowercased (the pattern has a case-insensitive part). */
  readonly folded: boolean;
}

/** What a plugin module's exported function receives (see load-plugins.ts). */
export interface PluginContext {
  env: Record<string, string | undefined>;
}
