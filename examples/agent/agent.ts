/**
 * A scripted agent that uses guardctl/sdk against the server of `npm start` (which loads
 * the repository's controls/ directory). No model is needed: the "tools" and the
 * "model" are small functions that return canned answers, so every run shows the same
 * allow, deny, steer, warn and log decisions.
 *
 *   npm start                  # terminal 1: the server on :8000 with controls/
 *   npm run example:agent      # terminal 2
 *
 * GUARD_URL and GUARD_API_KEY point it at another server; the first argument names
 * another agent of controls/agents.yaml (default: data-analyst).
 */
import {
  ControlSteerError,
  ControlViolationError,
  GuardUnavailableError,
  init,
  type GuardAgent,
} from '../../src/sdk/index.js';

const serverUrl = process.env.GUARD_URL ?? 'http://127.0.0.1:8000';
const agentName = process.argv[2] ?? 'data-analyst';

// ---- the agent's tools and model, scripted ----

async function runSql(args: { query: string }): Promise<string> {
  if (/credentials/i.test(args.query)) return 'aws_access_key_id = AKIAQWERTYUIOPASDF7Z';
  return '3 rows: (1, shipped) (2, pending) (3, shipped)';
}

async function deploy(args: { service: string; environment: string; dry_run?: boolean }): Promise<string> {
  return `${args.dry_run ? 'dry run of' : 'deployed'} ${args.service} to ${args.environment}`;
}

async function shell(args: { command: string }): Promise<string> {
  return `ran: ${args.command}`;
}

async function chat(prompt: string): Promise<string> {
  return `For "${prompt}", contact billing at billing@example.com.`;
}

// ---- a small runner that prints what happened ----

async function attempt(label: string, call: () => Promise<string>): Promise<void> {
  try {
    const out = await call();
    console.log(`  allow  ${label}\n         -> ${out}`);
  } catch (error) {
    if (error instanceof ControlViolationError) {
      console.log(`  DENY   ${label}\n         -> blocked by "${error.controlName}" ${JSON.stringify(error.metadata ?? {})}`);
    } else if (error instanceof ControlSteerError) {
      console.log(`  STEER  ${label}\n         -> ${error.steeringContext.message}`);
      for (const action of error.requiredActions) console.log(`            - ${action}`);
    } else if (error instanceof GuardUnavailableError) {
      console.log(`  UNAVAILABLE ${label}\n         -> ${error.message}`);
    } else {
      throw error;
    }
  }
}

async function main(): Promise<void> {
  console.log(`registering "${agentName}" with ${serverUrl}`);
  const guard: GuardAgent = await init({
    agentName,
    serverUrl,
    apiKey: process.env.GUARD_API_KEY,
    agentDescription: 'Answers questions by querying the analytics warehouse',
    steps: [
      { type: 'tool', name: 'run_sql', description: 'Runs one SQL statement against the warehouse' },
      { type: 'tool', name: 'deploy' },
      { type: 'tool', name: 'shell' },
      { type: 'llm', name: 'chat' },
    ],
    logger: {
      info: (m) => console.log(`         (log) ${m}`),
      warn: (m) => console.log(`         (warning) ${m}`),
    },
  });
  console.log(`loaded ${guard.controls.length} controls: ${guard.controls.map((c) => c.name).join(', ')}\n`);

  const sql = guard.control(runSql, { stepName: 'run_sql', type: 'tool' });
  const guardedDeploy = guard.control(deploy, { type: 'tool' });
  const guardedShell = guard.control(shell, { type: 'tool' });
  const model = guard.control(chat, { type: 'llm' });

  try {
    await attempt('run_sql SELECT with a WHERE clause', () => sql({ query: 'SELECT id, status FROM orders WHERE customer_id = 42' }));
    await attempt('run_sql DROP TABLE', () => sql({ query: 'DROP TABLE orders' }));
    await attempt('run_sql DELETE without WHERE', () => sql({ query: 'DELETE FROM orders' }));
    await attempt('run_sql whose output holds a cloud key', () => sql({ query: 'SELECT * FROM credentials LIMIT 1' }));
    await attempt('deploy to production', () => guardedDeploy({ service: 'api', environment: 'production' }));
    await attempt('deploy to staging as a dry run', () =>
      guardedDeploy({ service: 'api', environment: 'staging', dry_run: true }),
    );
    await attempt('shell rm -rf', () => guardedShell({ command: 'rm -rf /tmp/report-cache' }));
    await attempt('chat (a model call)', () => model('where do I send invoices?'));
  } finally {
    // Sends any queued events and stops the background refresh.
    await guard.shutdown();
  }
}

main().catch((error: unknown) => {
  console.error(`example failed: ${error instanceof Error ? error.message : String(error)}`);
  if (error instanceof Error && 'hint' in error && typeof error.hint === 'string') console.error(`hint: ${error.hint}`);
  process.exitCode = 1;
});
