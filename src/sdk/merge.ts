/**
 * Merges the result of the in-process (`execution: sdk`) controls with the server's
 * result under SPEC section 1's priority: deny beats steer beats ask beats allow, whichever
 * side the deciding control ran on. Ask controls run only on the server (model/control.ts),
 * so an approval always comes from the server's half.
 */
import type { ControlMatch, EvaluationResult } from '../model/index.js';

/** The result when no control ran; fresh each time because callers own what they get. */
export function emptyResult(): EvaluationResult {
  return { is_safe: true, decision: 'allow', confidence: 1, steering_context: null, matches: [], errors: [], non_matches: [], shadow_matches: [] };
}

const rank = { allow: 0, ask: 1, steer: 2, deny: 3 } as const;

export function mergeResults(local: EvaluationResult, remote: EvaluationResult | null): EvaluationResult {
  if (remote === null) return local;
  const winner = rank[remote.decision] > rank[local.decision] ? remote : local;
  const decision = winner.decision;
  const matches = byControlOrder([...local.matches, ...remote.matches]);
  // The steering context comes from the first steer match in control order, as the
  // engine does within one set, so both halves of a split set agree with a whole one.
  let steering = winner.steering_context;
  if (decision === 'steer') {
    const first = matches.find((m) => m.action === 'steer' && m.steering_context);
    steering = first?.steering_context ?? steering;
  }
  const merged: EvaluationResult = {
    is_safe: decision !== 'deny' && decision !== 'ask',
    decision,
    confidence: decision === 'allow' ? Math.min(local.confidence, remote.confidence) : winner.confidence,
    steering_context: decision === 'steer' ? steering : null,
    matches,
    errors: byControlOrder([...local.errors, ...remote.errors]),
    non_matches: byControlOrder([...local.non_matches, ...remote.non_matches]),
    shadow_matches: byControlOrder([...local.shadow_matches, ...remote.shadow_matches]),
  };
  // The server's approval stays with its answer only while that answer decides.
  if (remote.approval !== undefined && decision === remote.decision) merged.approval = remote.approval;
  return merged;
}

function byControlOrder(list: ControlMatch[]): ControlMatch[] {
  return list.sort((a, b) => a.control_id - b.control_id);
}

/** The match that decided a deny or steer result: the first of that action in control order. */
export function decidingMatch(result: EvaluationResult): ControlMatch | null {
  if (result.decision === 'allow') return null;
  return result.matches.find((m) => m.action === result.decision) ?? null;
}
