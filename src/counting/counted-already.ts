/**
 * Counters for a step that was counted when it was first submitted: a step submitted
 * again on the approval it asked for (docs/approvals.md). Each check reads its key's
 * window, with the step's first count in it, and adds nothing, so `repeat {max: 1}` does
 * not take the approved step for its own repeat, nor a budget spend its amount twice.
 */
import type { Counters } from './types.js';

export function countedAlready(counters: Counters): Counters {
  return { count: (request) => counters.count({ ...request, amount: 0 }) };
}
