/**
 * Example steps for `guardctl shadow-report`: when a shadow control matches, the step is
 * kept (at most one per control and minute) so the report can show what the control
 * would have acted on. What it keeps never repeats what the control guards: every value
 * the control read is replaced by a marker, then the redaction of recorded steps applies
 * (recording/value-masks.ts: secret field names, GUARD_RECORD_REDACT, credentials and card
 * numbers by value, numbers included), and strings are cut short.
 */
import { parseSelector, Root } from '../engine/select.js';
import type { Step } from '../model/index.js';
import type { Redactor } from '../recording/redact.js';
import { stepRedactor } from '../recording/value-masks.js';

/** What replaces a value a shadow control looked at. */
export const MATCHED_VALUE = '[MATCHED]';
/** Longest string kept in an example; longer ones are cut with a note of their length. */
const MAX_STRING = 200;
/** An example whose JSON is longer than this is not kept (the event row stays). */
export const MAX_EXAMPLE_BYTES = 8192;
const MINUTE_MS = 60_000;

export interface ExampleTaker {
  /**
   * The example JSON for a shadow match of `controlId` at `nowMs`, or null when one was
   * kept for this control in the same minute (or the step is too large to keep).
   */
  take(controlId: number, step: Step, selectorPaths: readonly string[], nowMs: number): string | null;
}

export function createExampleTaker(redactRules: readonly string[] = []): ExampleTaker {
  // The redaction of recorded steps: by name and by value (credentials, card numbers).
  const redactor = stepRedactor(redactRules);
  const lastMinute = new Map<number, number>();
  return {
    take(controlId, step, selectorPaths, nowMs) {
      const minute = Math.floor(nowMs / MINUTE_MS);
      if (lastMinute.get(controlId) === minute) return null;
      lastMinute.set(controlId, minute);
      // Bounded: controls come and go, the map must not grow with them forever.
      if (lastMinute.size > 10_000) lastMinute.clear();
      return exampleOf(step, selectorPaths, redactor);
    },
  };
}

/** The step as an example: what the control read masked, redacted, strings cut. PURE. */
export function exampleOf(step: Step, selectorPaths: readonly string[], redactor: Redactor): string | null {
  const text = JSON.stringify(cutStrings(redactor.redact(maskSelected(step, selectorPaths))));
  return text.length > MAX_EXAMPLE_BYTES ? null : text;
}

/**
 * A copy of the step with the value at each selector path replaced by MATCHED_VALUE (the
 * whole step, when a path selects it all). The step itself is untouched. PURE.
 */
export function maskSelected(step: Step, selectorPaths: readonly string[]): Record<string, unknown> | string {
  let masked: Record<string, unknown> | string = { type: step.type, name: step.name, input: step.input, output: step.output, context: step.context };
  for (const path of selectorPaths) masked = maskPath(masked, path);
  return masked;
}

/** A copy of `step` with the value at `path` replaced by MATCHED_VALUE (the original is untouched). */
function maskPath(step: Record<string, unknown> | string, path: string): Record<string, unknown> | string {
  if (typeof step === 'string') return step;
  const selector = parseSelector(path);
  // A path that does not parse was never compiled: mask everything rather than guess.
  if (typeof selector === 'string' || selector.root === Root.Whole) return MATCHED_VALUE;
  const rootKey = selector.root === Root.Name ? 'name' : selector.root === Root.Input ? 'input' : selector.root === Root.Output ? 'output' : 'context';
  return { ...step, [rootKey]: maskIn(step[rootKey], selector.segments, 0) };
}

function maskIn(value: unknown, segments: ReadonlyArray<string | number>, at: number): unknown {
  if (value === undefined) return undefined;
  if (at === segments.length) return MATCHED_VALUE;
  if (typeof value !== 'object' || value === null) return value;
  const key = segments[at]!;
  if (!Object.hasOwn(value, key)) return value;
  const copy = (Array.isArray(value) ? [...(value as unknown[])] : { ...(value as Record<string, unknown>) }) as Record<string | number, unknown>;
  copy[key] = maskIn((value as Record<string | number, unknown>)[key], segments, at + 1);
  return copy;
}

function cutStrings(value: unknown): unknown {
  if (typeof value === 'string') return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}… (${value.length} characters)` : value;
  if (Array.isArray(value)) return value.map(cutStrings);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = cutStrings(inner);
    return out;
  }
  return value;
}
