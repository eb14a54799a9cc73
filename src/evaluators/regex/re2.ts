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
