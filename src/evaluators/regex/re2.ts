import RE2 from 're2';
import { MAX_PATTERN_LENGTH, patternTooLong } from '../../model/index.js';
import { programSizeOf } from './program-size.js';

export type CompiledPattern = RE2;

/**
 * The largest program (program-size.ts) a pattern may compile to. It keeps the patterns
 * controls use (a card number with separators is about 100, a set of four secret formats
 * about 130) and bounds the worst search, at a few nanoseconds per instruction per byte
 * once RE2's DFA gives way to its NFA, to about a microsecond per byte of text
 * (bench/regex-cost.ts measures the worst patterns allowed).
 */
export const MAX_PROGRAM_SIZE = 200;

/**
 * Texts (as UTF-8 bytes) from this size on are searched on a worker thread, off the event
 * loop (search-pool.ts): below it a search costs microseconds, above it the worst pattern
 * allowed could hold the loop for tens of milliseconds.
 */
export const OFFLOAD_MIN_BYTES = 16 * 1024;

/**
 * Builds a linear-time (RE2) regular expression from a pattern a control supplies. Inline
 * flags such as `(?i)`, `(?s)` and `(?m)` are RE2 syntax and work as written; constructs a
 * backtracking engine would need (look-behind, back-references) are rejected here, when
 * the control is saved, and so are patterns longer than MAX_PATTERN_LENGTH or whose
 * program is larger than MAX_PROGRAM_SIZE: they are what would make a search cost more
 * than a bounded amount per byte of text (docs/security.md).
 * Returns the error text instead of throwing so callers can attach a field path.
 */
export function compilePattern(pattern: string, flags = ''): CompiledPattern | string {
  if (pattern.length > MAX_PATTERN_LENGTH) return patternTooLong(pattern.length);
  let re: CompiledPattern;
  try {
    re = new RE2(pattern, `u${flags}`);
  } catch (err) {
    return `invalid regular expression: ${err instanceof Error ? err.message : String(err)}`;
  }
  const size = programSizeOf(re.internalSource);
  if (size > MAX_PROGRAM_SIZE) {
    return (
      `pattern too large: its program has about ${size} instructions; the limit is ${MAX_PROGRAM_SIZE} ` +
      '(a counted repetition such as {100} counts each copy; see docs/security.md)'
    );
  }
  return re;
}

// Like RegExp, RE2 takes a compiled pattern with new flags (README: the second argument
// overrides flags); its typings list that form only for strings and Buffers.
const CopyRE2 = RE2 as unknown as new (pattern: CompiledPattern, flags: string) => CompiledPattern;

/**
 * A sticky copy of a compiled pattern. RE2 copies the translated pattern from the native
 * object, so callers need not keep the source text around just to build it later.
 */
export function stickyTwin(re: CompiledPattern): CompiledPattern {
  return new CopyRE2(re, `${re.flags}y`);
}

export type CompiledPatternSet = InstanceType<typeof RE2.Set>;

/**
 * Many patterns compiled into one program that says, in one pass over a text, whether any
 * of them matches (RE2::Set). With the flags compilePattern uses, so each pattern means
 * the same as on its own. Returns undefined when the set cannot be built (then the
 * patterns simply run one by one).
 */
export function compilePatternSet(patterns: readonly string[]): CompiledPatternSet | undefined {
  try {
    return new RE2.Set(patterns, 'u');
  } catch {
    return undefined;
  }
}
