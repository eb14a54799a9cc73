/**
 * What a control's answer shows of what it matched: the one place every evaluator's outcome
 * goes through on its way into a match, an event or an excerpt (docs/security.md). By
 * default the text an evaluator found is masked (`4111…1111`) in the message, the metadata
 * and the excerpt; a control with `reveal_match: true` shows it in full. Pure.
 */
import { maskEchoesInJson, maskFoundInJson, maskMatch, maskQuotedEchoes } from '../evaluators/mask.js';
import { maskSensitiveIn, maskSensitiveInJson } from '../evaluators/mask-sensitive.js';
import { sensitiveExcerpt } from '../evaluators/sensitive.js';
import { truncate } from '../evaluators/text.js';
import type { EvaluatorOutcome } from '../evaluators/types.js';
import type { JsonObject } from '../model/index.js';
import type { ControlExecution } from './api.js';

/** Found texts listed in a message at most; the rest are counted as "…". */
const MAX_LISTED = 5;
/** A revealed found text is cut to this many characters in a message. */
const REVEALED_MAX = 80;
/** Excerpts are at most this long. */
export const EXCERPT_MAX = 200;

/**
 * The outcome as an answer shows it: the found texts listed after the message (masked
 * unless `reveal`), and, unless `reveal`, masked wherever they occur in the metadata. As a
 * net under evaluators that echo the value without reporting it as found, parts of the
 * value (`text`, as the evaluator saw it) quoted in the message, and metadata strings of 8
 * characters or more that occur in it, are masked too; and so is every value any masking
 * evaluator would find in any string of the message and the metadata, keys included
 * (mask-sensitive.ts). `found` is kept for the excerpt.
 */
export function presentOutcome(o: EvaluatorOutcome, text: string | undefined, reveal: boolean): EvaluatorOutcome {
  const found = o.found ?? null;
  let message = o.message ?? null;
  let metadata = o.metadata ?? null;
  if (!reveal && text !== undefined) {
    if (message !== null) message = maskQuotedEchoes(message, text);
    if (metadata !== null) metadata = maskEchoesInJson(metadata, text) as JsonObject;
  }
  if (found !== null && found.length > 0) {
    const listed = found.slice(0, MAX_LISTED).map((f) => `"${reveal ? truncate(f, REVEALED_MAX) : maskMatch(f)}"`);
    const list = `${listed.join(', ')}${found.length > MAX_LISTED ? ', …' : ''}`;
    message = message === null || message === '' ? `matched ${list}` : `${message} ${list}`;
    if (!reveal && metadata !== null) metadata = maskFoundInJson(metadata, found) as JsonObject;
  }
  // The net under texts an evaluator built itself (keys in a path, a decoded identifier):
  // every value a masking evaluator would find is masked, whoever wrote it.
  if (!reveal) {
    if (message !== null) message = maskSensitiveIn(message);
    if (metadata !== null) metadata = maskSensitiveInJson(metadata) as JsonObject;
  }
  return { matched: o.matched, confidence: o.confidence, message, metadata, found };
}

/**
 * The excerpt of a matched value (its text, at most EXCERPT_MAX characters), made with the
 * one masking function of excerpts (evaluators/sensitive.ts): every value a masking
 * evaluator would find is masked, and so is everything in `stepFound` (what the step's
 * controls found). With `reveal`, what this control found (`own`) is shown as it is; else,
 * when it reported nothing, the whole text is masked: what it matched on is not known, so
 * nothing of it is shown.
 */
export function excerptOf(text: string, stepFound: readonly string[], own: readonly string[] | null | undefined, reveal: boolean): string {
  if (reveal) return sensitiveExcerpt(text, { max: EXCERPT_MAX, found: stepFound, keep: new Set(own ?? []) });
  if ((own ?? []).every((f) => f === '')) return maskMatch(text);
  return sensitiveExcerpt(text, { max: EXCERPT_MAX, found: stepFound });
}

/**
 * The excerpts of one step's matches. Each is made once every control of the step has run,
 * so that it masks what any of them found, not only its own control; controls that show
 * the same text share one excerpt.
 */
export class StepExcerpts {
  readonly #pending: Array<{ x: ControlExecution; text: string; own: readonly string[] | null | undefined; reveal: boolean }> = [];
  readonly #found: string[] = [];

  add(x: ControlExecution, text: string, own: readonly string[] | null | undefined, reveal: boolean): void {
    this.#pending.push({ x, text, own, reveal });
    if (own) for (const f of own) this.#found.push(f);
  }

  finish(): void {
    const made = new Map<string, string>();
    for (const p of this.#pending) {
      const shared = !p.reveal && (p.own ?? []).some((f) => f !== '');
      let excerpt = shared ? made.get(p.text) : undefined;
      if (excerpt === undefined) {
        excerpt = excerptOf(p.text, this.#found, p.own, p.reveal);
        if (shared) made.set(p.text, excerpt);
      }
      p.x.excerpt = excerpt;
    }
    this.#pending.length = 0;
  }
}
