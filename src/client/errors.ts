/**
 * Failures of the REST client beyond an error status (which is ApiError in src/errors.ts).
 * Both are UserErrors so the CLI prints them as a message and a hint, without a stack:
 * an unreachable or misbehaving server is something the user fixes, not a guardctl bug.
 */
import { UserError } from '../errors.js';

/** The request never got an HTTP answer: refused, timed out, DNS failure, reset. */
export class ConnectionError extends UserError {
  constructor(
    readonly method: string,
    readonly url: string,
    /** A short machine word for the cause: ECONNREFUSED, ENOTFOUND, TIMEOUT, ... */
    readonly code: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `cannot reach ${url} (${method}): ${reason}`,
      'check that the server is running and that --server / GUARD_URL points at it',
    );
    this.name = 'ConnectionError';
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/**
 * The server answered 2xx but not with what the API promises: not JSON, an HTML page,
 * a truncated body, or JSON of the wrong shape. Never treated as success.
 */
export class ResponseShapeError extends UserError {
  constructor(
    /** `METHOD /path` of the endpoint, without the base URL. */
    readonly endpoint: string,
    readonly url: string,
    readonly problem: string,
  ) {
    super(
      `${endpoint} answered something that is not what the API promises: ${problem}`,
      'check that --server / GUARD_URL points at a guardctl server (not a proxy or another service)',
    );
    this.name = 'ResponseShapeError';
  }
}
