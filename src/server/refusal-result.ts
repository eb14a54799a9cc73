import type { EvaluationResult, JsonObject } from '../model/index.js';

/**
 * A deny the server answers itself, when a step cannot be checked (too deep, a session
 * beyond the bound): one match that names no stored control (id 0), so a fail-open client
 * still sees a deny and why.
 */
export function serverDenyResult(controlName: string, message: string, metadata: JsonObject | null = null): EvaluationResult {
  return {
    is_safe: false,
    decision: 'deny',
    confidence: 1,
    steering_context: null,
    matches: [{ control_id: 0, control_name: controlName, action: 'deny', result: { matched: true, confidence: 1, message, metadata }, error: message }],
    errors: [],
    non_matches: [],
    shadow_matches: [],
  };
}
