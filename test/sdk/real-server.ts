/**
 * Starts the real guardctl server in-process on 127.0.0.1, a free port and an in-memory
 * SQLite store, with observability on and a short flush interval so events written by
 * the SDK become queryable quickly.
 */
import type { GuardClient } from '../../src/client/index.js';
import type { ControlDataInput } from '../../src/model/index.js';
import { startTestServer } from '../support/server.js';

export interface RunningServer {
  url: string;
  client: GuardClient;
  /** Stops the server (idempotent); the port then refuses connections. */
  close(): Promise<void>;
}

export async function startRealServer(): Promise<RunningServer> {
  const server = await startTestServer({ config: { flushIntervalSeconds: 0.05 }, observability: {}, listen: true });
  server.observability!.start();
  return { url: server.url, client: server.client!, close: server.close };
}

/** Creates a control with data and links it to the agent; returns its id. */
export async function addControl(
  client: GuardClient,
  agentName: string,
  name: string,
  data: ControlDataInput,
): Promise<number> {
  const { control_id } = await client.createControl({ name, data });
  await client.link(agentName, control_id);
  return control_id;
}

/** The controls most SDK tests run against: two run in-process, two on the server. */
export async function seedSupportBot(client: GuardClient, agentName = 'support-bot'): Promise<Record<string, number>> {
  await client.initAgent({ agent_name: agentName });
  const ids: Record<string, number> = {};
  ids['block-drop'] = await addControl(client, agentName, 'block-drop', {
    execution: 'sdk',
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
    action: { decision: 'deny', metadata: { severity: 'high' } },
  });
  ids['warn-select-star'] = await addControl(client, agentName, 'warn-select-star', {
    execution: 'sdk',
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)select\\s+\\*' } },
    action: { decision: 'warn' },
  });
  ids['steer-ssn'] = await addControl(client, agentName, 'steer-ssn', {
    execution: 'server',
    scope: { step_types: ['llm'], stages: ['pre'] },
    selector: { path: 'input' },
    evaluator: { name: 'regex', config: { pattern: '\\b\\d{3}-\\d{2}-\\d{4}\\b' } },
    action: {
      decision: 'steer',
      steering_context: { message: 'remove the social security number', required_actions: ['redact_pii'] },
    },
  });
  ids['deny-secret-output'] = await addControl(client, agentName, 'deny-secret-output', {
    execution: 'server',
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['post'] },
    selector: { path: 'output' },
    evaluator: { name: 'list', config: { values: ['secret'], match_mode: 'contains' } },
    action: { decision: 'deny', metadata: { reason: 'secrets must not leave the database' } },
  });
  return ids;
}
