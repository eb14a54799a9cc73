/**
 * The three kinds of failure a user can meet (STYLE.md habit 3). Library code throws
 * them; only the CLI entry turns them into output and an exit code.
 */

/** Something the user can fix: a message, a hint, no stack trace. */
export class UserError extends Error {
  /** Data a machine reading `--format json` gets beside the message (for example why apply refused). */
  details?: Record<string, unknown>;

  constructor(
    message: string,
    readonly hint?: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'UserError';
  }
}

export interface ProblemBody {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  error_code?: string;
  errors?: Array<{ field: string; code: string; message: string }>;
  /** `POST /changes`: the 0-based index of the change that made the batch fail. */
  change_index?: number;
}

/** The server answered with an error status; `problem` is its problem+json body when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: ProblemBody | null,
    readonly method: string,
    readonly url: string,
  ) {
    super(problem?.detail ?? problem?.title ?? `${method} ${url} answered HTTP ${status}`);
    this.name = 'ApiError';
  }
}
