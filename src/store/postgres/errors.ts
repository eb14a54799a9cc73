import { StoreError } from '../types.js';

/** Socket-level failures: the database cannot be reached right now. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE', 'EAI_AGAIN']);
/**
 * Server states that mean "try again later": shutting down, starting up, too many clients,
 * and a statement cancelled by `statement_timeout` (57014: the database is too slow to
 * answer within the time a request may take).
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '53400', '57014']);

/**
 * A transaction the server chose to abort to resolve a conflict with another (deadlock
 * detected, serialization failure): nothing was written, and the same request can succeed
 * when tried again, so it is answered as a 503, not as a fault (500).
 */
const CONFLICT_SQLSTATES = new Set(['40P01', '40001']);

/** pg's own timeout of a query with no answer (`query_timeout`). */
export function isClientTimeout(error: unknown): boolean {
  return error instanceof Error && /^Query read timeout$/.test(error.message);
}

/** Maps pg failures to the store's error kinds; anything else passes through unchanged. */
export function mapPgError(error: unknown): unknown {
  if (error instanceof StoreError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === '23505') return new StoreError('conflict', message);
  if (code === '23503') return new StoreError('not_found', message);
  if (typeof code === 'string' && CONFLICT_SQLSTATES.has(code)) return new StoreError('unavailable', `database conflict, try again: ${message}`);
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08'))) {
    return new StoreError('unavailable', `database unavailable: ${message}`);
  }
  if (isClientTimeout(error) || /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(message)) {
    return new StoreError('unavailable', `database unavailable: ${message}`);
  }
  return error;
}
