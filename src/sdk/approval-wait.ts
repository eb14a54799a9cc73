/**
 * What `check` does when a step needs a person (docs/approvals.md): with `approval: 'wait'`
 * (the default) it long-polls the approval until it is decided, expires, or the caller's
 * `approvalTimeout` runs out; with `'throw'` it raises at once, so an agent that pauses can
 * resume later on the same approval id.
 */
import type { GuardClient } from '../client/index.js';
import type { ApprovalRecord } from '../model/index.js';
import { ApprovalError } from './errors.js';
import { approvalTextOf } from './verdict.js';

/** `wait` (default): hold the call until a person decides; `throw`: raise ApprovalError (pending) at once. */
export type ApprovalMode = 'wait' | 'throw';

/** Longest one long-poll asks the server to hold (the server's own cap). */
const POLL_MS = 120_000;

/**
 * The approval once decided or expired, or as it stands when `timeoutMs` (from now) ran
 * out. A long-poll that fails (the server restarted, a proxy cut it) is tried again
 * after a short pause until the time is up: the question lives in the store, not in the
 * connection.
 */
export async function awaitDecision(client: GuardClient, pending: ApprovalError, timeoutMs: number, now: () => number = Date.now): Promise<ApprovalRecord | null> {
  const until = Math.min(now() + timeoutMs, Date.parse(pending.expiresAt) + 1000);
  let latest: ApprovalRecord | null = null;
  for (;;) {
    const left = until - now();
    if (left <= 0) return latest;
    try {
      latest = await client.approvals.wait(pending.approvalId, Math.min(left, POLL_MS));
      if (latest.status !== 'pending') return latest;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, Math.min(500, Math.max(0, left))));
    }
  }
}

/** The error for an approval that did not let the step run: denied, expired, or still pending when the wait ended. */
export function approvalErrorOf(pending: ApprovalError, decided: ApprovalRecord | null): ApprovalError {
  if (decided === null) return pending;
  const ref = { id: decided.id, status: decided.status, expires_at: decided.expires_at, reason: decided.reason };
  return new ApprovalError(decided.id, decided.status, decided.expires_at, decided.reason, pending.result, approvalTextOf(ref, pending.message));
}
