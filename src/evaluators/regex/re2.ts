import RE2 from 're2';

export type CompiledPattern = RE2;

/**
 * Builds a linear-time (RE2) regular expression. Inline flags such as `(?i)`, `(?s)` and
 * `(?m)` are RE2 syntax and work as written; constructs a backtracking engine would need
 * (look-behind, back-references) are rejected here, when the control is saved.
 * Returns the error text instead of throwing so callers can attach a field path.
 */
export function compilePattern(pattern: string, flags = ''): CompiledPattern | string {
  try {
    return new RE2(pattern, `u${flags}`);
  } catch (err) {
    return `invalid regular expression: ${err instanceof Error ? err.message : String(err)}`;
  }
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
