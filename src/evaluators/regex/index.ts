import { z } from 'zod';
import { PatternTextSchema } from '../../model/index.js';
import { ConfigError, type CompiledCheck, type EvaluatorDefinition, type EvaluatorOutcome, type ScanHint } from '../types.js';
import { textOf } from '../text.js';
import { mayMatch, prefilterOf } from './literals.js';
import { compilePattern, OFFLOAD_MIN_BYTES, stickyTwin, type CompiledPattern } from './re2.js';
import { searchPool } from './search-pool.js';

export const RegexConfigSchema = z.strictObject({
  pattern: PatternTextSchema.describe('Regular expression in RE2 syntax; inline flags such as (?i) are supported'),
});
export type RegexConfig = z.infer<typeof RegexConfigSchema>;

// Outcomes without a message are shared: a non-match allocates nothing.
const NO_MATCH: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });
const EMPTY_MATCH: EvaluatorOutcome = Object.freeze({ matched: true, confidence: 1, message: 'pattern matched an empty string', metadata: null });

export const regexEvaluator: EvaluatorDefinition = {
  name: 'regex',
  description:
    'Matches the selected value against a regular expression (RE2: linear time, (?i) supported). ' +
    'Non-string values are searched as JSON.',
  configSchema: z.toJSONSchema(RegexConfigSchema, { io: 'input' }),
  zodSchema: RegexConfigSchema,
  compile(config, parts) {
    const { pattern } = RegexConfigSchema.parse(config);
    // The check depends on the pattern alone, so controls repeating a pattern share one
    // check and one native RE2 program (a few KB each).
    return parts ? parts.share(pattern, () => checkOf(pattern)) : checkOf(pattern);
  },
};

/**
 * search finds where a match starts (as fast as test when there is none); a sticky twin
 * then finds where it ends. Together they cost a fraction of exec, which makes RE2 extract
 * every submatch and build a result array. The twin is built on the first match only: each
 * RE2 program holds native memory, and most controls rarely match. The check keeps no state
 * between calls (the twin's lastIndex is set and read in one synchronous step), which is
 * what lets several controls share it.
 */
function checkOf(pattern: string): CompiledCheck {
  const re = compilePattern(pattern);
  if (typeof re === 'string') throw new ConfigError('pattern', re);
  let sticky: CompiledPattern | undefined;
  // Literals every match contains (literals.ts): most texts lack them, and then a substring
  // search answers instead of a call into RE2.
  const prefilter = prefilterOf(pattern);
  const check: CompiledCheck & ScanHint = (value, memo) => {
    const text = memo ? memo.text(value) : textOf(value);
    if (text === undefined) return NO_MATCH;
    if (prefilter !== null && !mayMatch(prefilter, text, memo)) return NO_MATCH;
    // With a memo, the step's regex controls share the text as UTF-8 bytes (offsets are
    // then in bytes); RE2 accepts either form.
    const subject = memo ? memo.utf8(text) : text;
    // A long text is searched on a thread of its own, so that it cannot hold the event
    // loop (search-pool.ts); the answer is then a promise.
    if (subject.length >= OFFLOAD_MIN_BYTES) return searchAway(pattern, typeof subject === 'string' ? Buffer.from(subject, 'utf8') : subject);
    const at = re.search(subject);
    if (at < 0) return NO_MATCH;
    sticky ??= stickyTwin(re);
    sticky.lastIndex = at;
    const to = sticky.test(subject) ? sticky.lastIndex : at;
    return matchOf(typeof subject === 'string' ? subject.slice(at, to) : subject.toString('utf8', at, to));
  };
  // The check matches exactly when the pattern does, on the memo's text: the engine may
  // scan it together with the other regex checks of the same field (evaluate.ts).
  return Object.assign(check, { scanPattern: pattern, scanPrefilter: prefilter });
}

/**
 * What matched goes in `found`, never in the message: the engine shows it masked unless
 * the control reveals it (engine/present.ts).
 */
function matchOf(found: string): EvaluatorOutcome {
  if (found === '') return EMPTY_MATCH;
  return { matched: true, confidence: 1, message: 'pattern matched', metadata: null, found: [found] };
}

async function searchAway(pattern: string, bytes: Buffer): Promise<EvaluatorOutcome> {
  const hit = await searchPool().search(pattern, bytes);
  return hit === null ? NO_MATCH : matchOf(bytes.toString('utf8', hit.at, hit.to));
}
