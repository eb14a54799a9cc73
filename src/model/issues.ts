import type { z } from 'zod';

/** A validation problem at an exact field path, the shape of problem+json `errors[]`. */
export interface FieldIssue {
  /** Dotted path with [index] for arrays, for example `scope.stages[0]`; '' for the root. */
  field: string;
  code: string;
  message: string;
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/**
 * Flattens zod issues into field issues. Union failures are unwrapped to the branch
 * that got furthest, so a typo deep in a condition tree names its real path.
 */
export function fieldIssuesOf(error: z.ZodError, prefix: readonly PropertyKey[] = []): FieldIssue[] {
  const out: FieldIssue[] = [];
  for (const issue of error.issues) collect(issue, prefix, out);
  return out;
}

function collect(issue: z.core.$ZodIssue, prefix: readonly PropertyKey[], out: FieldIssue[]): void {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const best = issue.errors.reduce((a, b) => (deepest(b) > deepest(a) ? b : a));
    for (const inner of best) collect(inner, path, out);
    return;
  }
  if (issue.code === 'unrecognized_keys') {
    for (const key of issue.keys) {
      out.push({ field: formatPath([...path, key]), code: 'unknown_field', message: `unknown field "${key}"` });
    }
    return;
  }
  out.push({ field: formatPath(path), code: issue.code, message: issue.message });
}

function deepest(issues: z.core.$ZodIssue[]): number {
  return Math.max(0, ...issues.map((i) => i.path.length + (i.code === 'invalid_type' ? 0 : 1)));
}
