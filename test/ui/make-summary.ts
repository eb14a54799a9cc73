import type { EvaluationSummary } from '../../src/model/stream.js';

type Match = EvaluationSummary['matches'][number];

let next = 0;

/** A valid summary; `deny`/`steer` decisions get a matching control unless matches are given. */
export function makeSummary(over: Partial<EvaluationSummary> = {}): EvaluationSummary {
  next++;
  const decision = over.decision ?? 'allow';
  const matches: Match[] =
    over.matches ??
    (decision === 'allow'
      ? []
      : [
          {
            control_id: decision === 'deny' ? 1 : 2,
            control_name: decision === 'deny' ? 'block-sql' : 'steer-pii',
            action: decision,
            message: decision === 'deny' ? 'destructive SQL' : 'contains PII',
            steering_context: decision === 'steer' ? { message: 'redact the email', required_actions: ['redact'] } : null,
            excerpt: decision === 'deny' ? 'DROP TABLE users' : 'mail bob@example.com',
          },
        ]);
  return {
    id: `ev-${next}`,
    timestamp: '2025-01-02T03:04:05.678Z',
    trace_id: `trace-${next}`,
    agent_name: 'support-bot',
    step_name: 'run_sql',
    step_type: 'tool',
    stage: 'pre',
    duration_ms: 0.42,
    evaluated: 3,
    errors: [],
    shadow_matches: [],
    ...over,
    decision,
    matches,
  };
}
