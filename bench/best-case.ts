/**
 * The best case of bench/workloads.ts: the step and the 50 controls of `bench-bot`, shared
 * by the server, observability, PostgreSQL, shadow and rate benchmarks. A module of its
 * own, so that workloads.ts and server.ts do not import each other.
 */
import type { ControlDataInput } from '../src/model/index.js';

/**
 * The best-case step (bench/workloads.ts): a tool call with 10 controls in scope, none of
 * whose words the query holds, so the prefilter rules every one out and no evaluator runs.
 * The observability, PostgreSQL and shadow benchmarks post it too.
 */
export const EVALUATION_BODY = JSON.stringify({
  agent_name: 'bench-bot',
  stage: 'pre',
  step: {
    type: 'tool',
    name: 'run_sql',
    input: { query: 'SELECT id, email FROM customers WHERE region = $1 ORDER BY created_at DESC LIMIT 50', params: ['eu'] },
    context: { user_id: 'u-1234', session: 's-42' },
  },
});

/** 50 controls for `bench-bot`: 10 in scope for the benchmark step (regex and list), 40 not. */
export function benchControls(): Array<{ name: string; data: ControlDataInput }> {
  const controls: Array<{ name: string; data: ControlDataInput }> = [];
  for (let i = 0; i < 50; i++) {
    const inScope = i < 10;
    const scope = inScope
      ? { step_types: ['tool' as const], step_names: ['run_sql'], stages: ['pre' as const] }
      : i % 2
        ? { step_types: ['llm' as const], stages: ['pre' as const] }
        : { step_types: ['tool' as const], step_names: [`other_tool_${i}`], stages: ['pre' as const, 'post' as const] };
    const evaluator = i % 2
      ? { name: 'list', config: { values: [`forbidden_${i}`, 'drop', 'truncate'], match_mode: 'contains' } }
      : { name: 'regex', config: { pattern: `(?i)\\b(drop|truncate|alter)\\s+table\\s+t${i}\\b` } };
    controls.push({
      name: `bench-${i}`,
      data: {
        scope,
        selector: { path: i % 3 === 0 ? 'input' : 'input.query' },
        evaluator,
        action: { decision: i % 5 === 0 ? 'steer' : 'deny', ...(i % 5 === 0 ? { steering_context: { message: 'rewrite the query' } } : {}) },
      },
    });
  }
  return controls;
}
