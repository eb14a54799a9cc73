import type { FastifyInstance } from 'fastify';
import type { EvaluatorDefinition } from '../../src/evaluators/types.js';
import { ControlDataSchema, type ControlDataInput } from '../../src/model/index.js';
import type { CreateObservabilityOptions, Observability } from '../../src/observability/observability.js';
import type { ServerConfig } from '../../src/server/config.js';
import type { Store } from '../../src/store/types.js';
import { startTestServer } from '../support/server.js';

export interface TestApp {
  app: FastifyInstance;
  store: Store;
  config: ServerConfig;
  observability: Observability;
  close(): Promise<void>;
}

/** A real app on a real in-memory SQLite store (test/support/server.ts), observability on, flushed only when asked. */
export async function makeApp(
  overrides: Partial<ServerConfig> = {},
  opts: { stream?: CreateObservabilityOptions['stream']; evaluators?: EvaluatorDefinition[] } = {},
): Promise<TestApp> {
  const server = await startTestServer({
    config: { flushIntervalSeconds: 3600, ...overrides },
    evaluators: opts.evaluators ?? [],
    observability: { stream: opts.stream },
  });
  return { app: server.app, store: server.store, config: server.config, observability: server.observability!, close: server.close };
}

/** Stores a control linked to `agent` and returns its id. */
export async function addControl(store: Store, agent: string, name: string, data: ControlDataInput): Promise<number> {
  const control = await store.createControl({ name, data: ControlDataSchema.parse(data) });
  if (!(await store.getAgent(agent))) await store.upsertAgent({ agent_name: agent });
  await store.linkControl(agent, control.control_id);
  return control.control_id;
}

export const denySql: ControlDataInput = {
  scope: { step_types: ['tool'], stages: ['pre'] },
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
  action: { decision: 'deny', metadata: { severity: 'high' } },
};

export const warnEmail: ControlDataInput = {
  scope: { step_types: ['tool'] },
  selector: { path: 'input.query' },
  evaluator: { name: 'regex', config: { pattern: '@' } },
  action: { decision: 'warn' },
};

export function evaluation(query: string, agent = 'support-bot') {
  return { agent_name: agent, stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query } } };
}

/** A plugin evaluator that always fails, to exercise evaluator errors end to end. */
export const failingEvaluator: EvaluatorDefinition = {
  name: 'always_fails',
  description: 'throws on every value',
  configSchema: { type: 'object' },
  compile: () => () => {
    throw new Error('scorer unavailable');
  },
};
