/**
 * The controls every adapter test runs against, on a real server: a deny that runs in
 * the SDK, a steer and a post-stage deny that run on the server, and a steer on model
 * calls. Tests drive a framework's own mock model into calling tools that hit each.
 */
import { ControlDataSchema, type ControlDataInput, type ControlRecord } from '../../src/model/index.js';
import { init, type GuardAgent, type GuardLogger } from '../../src/sdk/index.js';
import type { GuardClient } from '../../src/client/index.js';
import { addControl, startRealServer, type RunningServer } from '../sdk/real-server.js';

export const AGENT = 'framework-bot';

export interface GuardedSetup {
  server: RunningServer;
  guard: GuardAgent;
  close(): Promise<void>;
}

export const quietLogger: GuardLogger = { info: () => undefined, warn: () => undefined };

/** A control as the server lists it, for a GuardAgent built without a server (the MCP relay's tests). */
export function sdkControl(id: number, name: string, data: ControlDataInput): ControlRecord {
  return { control_id: id, name, enabled: true, managed_by: null, source: null, created_at: '', updated_at: '', data: ControlDataSchema.parse(data) };
}

/** Denies DROP TABLE in run_sql's query, in the agent's process. */
export const blockDrop: ControlDataInput = {
  execution: 'sdk',
  scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
  action: { decision: 'deny' },
};

/** Denies any tool output holding an AWS access key id. */
/** A card number the pii evaluator finds. */
export const CARD = '4111 1111 1111 1111';

/** No card number in what a resource read or a tool answers, checked in the gateway's process (the MCP attack passes). */
export const denyCardOutput: ControlDataInput = {
  execution: 'sdk',
  scope: { step_types: ['resource', 'tool'], stages: ['post'] },
  selector: { path: 'output' },
  evaluator: { name: 'pii', config: { kinds: ['credit_card'] } },
  action: { decision: 'deny', message: 'No card numbers.' },
};

export function denySecretOutput(execution: 'sdk' | 'server'): ControlDataInput {
  return {
    execution,
    scope: { step_types: ['tool'], stages: ['post'] },
    selector: { path: 'output' },
    evaluator: { name: 'regex', config: { pattern: 'AKIA[0-9A-Z]{16}' } },
    action: { decision: 'deny' },
  };
}

export async function startGuarded(): Promise<GuardedSetup> {
  const server = await startRealServer();
  const { client } = server;
  await client.initAgent({ agent_name: AGENT });
  await addControl(client, AGENT, 'block-drop', blockDrop);
  await addControl(client, AGENT, 'steer-production-deploy', {
    scope: { step_types: ['tool'], step_names: ['deploy'], stages: ['pre'] },
    selector: { path: 'input.environment' },
    evaluator: { name: 'list', config: { values: ['production'] } },
    action: {
      decision: 'steer',
      steering_context: { message: 'Production deploys need a dry run first.', required_actions: ['call deploy with dry_run=true'] },
    },
  });
  await addControl(client, AGENT, 'deny-secret-output', denySecretOutput('server'));
  await addControl(client, AGENT, 'steer-ssn-in-prompt', {
    scope: { step_types: ['llm'], stages: ['pre'] },
    selector: { path: 'input' },
    evaluator: { name: 'regex', config: { pattern: '\\b\\d{3}-\\d{2}-\\d{4}\\b' } },
    action: { decision: 'steer', steering_context: { message: 'Remove the social security number from the prompt.' } },
  });
  const guard = await init({ agentName: AGENT, serverUrl: server.url, refreshIntervalSeconds: 0, logger: quietLogger, disclosure: 'name' });
  return {
    server,
    guard,
    async close() {
      await guard.shutdown();
      await server.close();
    },
  };
}

/**
 * The exfiltration recipe on `agent` (docs/sessions.md): fetch_url marks the session
 * untrusted_content, get_customer private_data, and send_email with both is denied; with
 * `askEveryEmail`, every send_email also asks a person first.
 */
export async function addExfiltrationRecipe(client: GuardClient, agent: string, options: { askEveryEmail?: boolean } = {}): Promise<void> {
  const mark = (name: string, step: string, label: string) =>
    addControl(client, agent, name, {
      scope: { step_types: ['tool'], step_names: [step], stages: ['post'] },
      selector: { path: 'name' },
      evaluator: { name: 'regex', config: { pattern: '.' } },
      action: { decision: 'log', session_labels: [label] },
    });
  await mark('mark-untrusted-content', 'fetch_url', 'untrusted_content');
  await mark('mark-private-data', 'get_customer', 'private_data');
  const onSendEmail = { step_types: ['tool' as const], step_names: ['send_email'], stages: ['pre' as const] };
  if (options.askEveryEmail) {
    await addControl(client, agent, 'ask-every-email', {
      scope: onSendEmail,
      selector: { path: 'name' },
      evaluator: { name: 'regex', config: { pattern: '.' } },
      action: { decision: 'ask', approval: { timeout: '15m' } },
    });
  }
  await addControl(client, agent, 'deny-exfiltration', {
    scope: { ...onSendEmail, session_labels: ['untrusted_content', 'private_data'] },
    selector: { path: 'name' },
    evaluator: { name: 'regex', config: { pattern: '.' } },
    action: { decision: 'deny', message: 'The run read untrusted content and private data; nothing may leave it.' },
  });
}
