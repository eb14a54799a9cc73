/**
 * Diagnostics: what the loader finds wrong (or suspicious) in a controls directory.
 * Plain data so that every renderer (text code frames, JSON, GitHub annotations) and the
 * hot-reload path can share them.
 */

export type Severity = 'error' | 'warning';

/** Stable machine codes; renderers and CI scripts may rely on them (docs/output-style.md). */
export type DiagnosticCode =
  | 'yaml_syntax'
  | 'empty_file'
  | 'binary_file'
  | 'file_too_large'
  | 'unreadable_file'
  | 'not_a_mapping'
  | 'missing_kind'
  | 'unknown_kind'
  | 'duplicate_control'
  | 'duplicate_agent'
  | 'dangling_link'
  | 'duplicate_link'
  | 'invalid_pattern'
  | 'unknown_evaluator'
  | 'invalid_config'
  | 'unlinked_control'
  | 'disabled_linked'
  | 'no_documents'
  | 'missing_field'
  // Schema issues keep zod's code (unknown_field, invalid_type, too_small, invalid_value, ...).
  | (string & {});

export interface Diagnostic {
  severity: Severity;
  /** Path as given to the loader (relative to the directory the CLI read). */
  file: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
  endLine?: number;
  endColumn?: number;
  /** Field path inside the document, for example `evaluator.config.pattern`; '' for the document. */
  field: string;
  message: string;
  /** What would fix it. */
  hint: string;
  code: DiagnosticCode;
}

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === 'error');
}

/** Files in path order, then by position: the order every renderer prints. */
export function sortDiagnostics(diagnostics: readonly Diagnostic[]): Diagnostic[] {
  return [...diagnostics].sort(
    (a, b) =>
      (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) ||
      a.line - b.line ||
      a.column - b.column ||
      (a.code < b.code ? -1 : a.code > b.code ? 1 : 0),
  );
}

export function countBySeverity(diagnostics: readonly Diagnostic[]): { errors: number; warnings: number } {
  let errors = 0;
  let warnings = 0;
  for (const d of diagnostics) {
    if (d.severity === 'error') errors++;
    else warnings++;
  }
  return { errors, warnings };
}
