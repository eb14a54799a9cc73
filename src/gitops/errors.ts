import { ApiError } from '../errors.js';

/** One line for a failed operation: the server's detail and field issues when it sent them. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    const issues = (error.problem?.errors ?? []).map((e) => `${e.field || '(body)'}: ${e.message}`);
    const base = `HTTP ${error.status}: ${error.message}`;
    return issues.length > 0 ? `${base} (${issues.join('; ')})` : base;
  }
  return error instanceof Error ? error.message : String(error);
}
