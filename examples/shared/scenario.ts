/**
 * What every framework example does: the `data-analyst` agent of this repository's
 * controls/ directory makes three tool calls, scripted so that no model, network or API
 * key is needed: one allowed, one denied, one steered. Each example prints what the
 * guard decided and what the model read back.
 */
import type { GuardDecision } from '../../src/adapters/decisions.js';
import { init, type GuardAgent } from '../../src/sdk/index.js';

export interface ScriptedCall {
  label: string;
  tool: 'run_sql' | 'deploy';
  args: Record<string, unknown>;
}

export const CALLS: readonly ScriptedCall[] = [
  { label: 'a bounded query', tool: 'run_sql', args: { query: 'SELECT id, status FROM orders WHERE customer_id = 42' } },
  { label: 'a destructive query', tool: 'run_sql', args: { query: 'DROP TABLE orders' } },
  { label: 'a production deploy', tool: 'deploy', args: { service: 'api', environment: 'production' } },
];

/** The tools the scripted model calls; they only answer with canned text. */
export async function runSql({ query }: { query: string }): Promise<string> {
  return `3 rows for: ${query}`;
}

export async function deploy({ service, environment }: { service: string; environment: string }): Promise<string> {
  return `deployed ${service} to ${environment}`;
}

/** Registers the agent with the server of `npm start` (GUARD_URL and GUARD_API_KEY point elsewhere). */
export async function startGuard(): Promise<GuardAgent> {
  return init({
    agentName: 'data-analyst',
    serverUrl: process.env.GUARD_URL ?? 'http://127.0.0.1:8000',
    apiKey: process.env.GUARD_API_KEY,
    refreshIntervalSeconds: 0,
    // The examples show the deciding control's name to the model; the default shows less.
    disclosure: 'name',
    logger: { info: () => undefined, warn: (m) => console.log(`         (warning) ${m}`) },
  });
}

/** onDecision for the adapters: one line per pre-stage verdict. */
export function printDecision({ step, stage, verdict }: GuardDecision): void {
  if (stage !== 'pre') return;
  const word = verdict.decision === 'allow' ? 'allow' : verdict.decision.toUpperCase();
  console.log(`  ${word.padEnd(6)} ${step.name} ${JSON.stringify(step.input)}`);
}

/** What the model was given back for the call: the tool's output or the guard's text. */
export function printModelRead(text: string): void {
  const [first, ...rest] = text.split('\n');
  console.log(`         model reads: ${first}`);
  for (const line of rest) console.log(`                      ${line}`);
}

export function exitOnFailure(error: unknown): void {
  console.error(`example failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
