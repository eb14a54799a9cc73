import { ApiError } from '../errors.js';

/** One line for a failed operation: the server's detail and field issues when it sent them. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) {
    // An issue that only repeats the detail (a refused change names itself in both) is said once.
    const issues = (error.problem?.errors ?? []).filter((e) => !error.message.includes(e.message)).map((e) => `${e.field || '(body)'}: ${e.message}`);
    const base = `HTTP ${error.status}: ${error.message}`;
    return issues.length > 0 ? `${base} (${issues.join('; ')})` : base;
  }
  return error instanceof Error ? error.message : String(error);
}
