import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { EvaluatorDefinition } from '../../src/evaluators/types.js';
import type { ControlDataInput } from '../../src/model/index.js';
import type { Observability } from '../../src/observability/index.js';
import type { Store } from '../../src/store/types.js';
import { startTestServer as startServer } from '../support/server.js';

export interface TestServer {
  app: FastifyInstance;
  store: Store;
  /** Present when started with `observability: true`. */
  observability?: Observability | undefined;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  /** Wraps the real store (for example in a counting proxy). */
  wrapStore?: (store: Store) => Store;
  observability?: boolean;
  /** Plugin evaluators added to the default registry. */
  evaluators?: EvaluatorDefinition[];
}

/** A real app on a real in-memory SQLite store (test/support/server.ts), observability off unless asked. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const server = await startServer({
    env: { OBSERVABILITY_ENABLED: 'false', ...options.env },
    ...(options.wrapStore ? { wrapStore: options.wrapStore } : {}),
    evaluators: options.evaluators ?? [],
    observability: options.observability ? {} : false,
  });
  // The store the app serves: the wrapped one when a wrapper was given.
  return { app: server.app, store: server.store, observability: server.observability, close: server.close };
}

export function sqlControl(overrides: Partial<ControlDataInput> = {}): ControlDataInput {
  return {
    description: 'block destructive SQL',
    scope: { step_types: ['tool'], step_names: ['run_sql'], stages: ['pre'] },
    selector: { path: 'input.query' },
    evaluator: { name: 'regex', config: { pattern: '(?i)\\bdrop\\s+table\\b' } },
    action: { decision: 'deny' },
    ...overrides,
  };
}

// Bodies are read loosely in tests; each assertion states the shape it expects.
export function json(response: LightMyRequestResponse) {
  return JSON.parse(response.body);
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export async function call(
  app: FastifyInstance,
  method: Method,
  url: string,
  payload?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  // Writes say their (possibly empty) body is JSON; request-bodies and the contract test send none.
  const contentType = method === 'GET' ? {} : { 'content-type': 'application/json' };
  return app.inject({ method, url, payload: payload as never, headers: { ...contentType, ...headers } });
}

/** Creates a control with data and an agent linked to it; returns the control id. */
export async function seedAgentWithControl(
  app: FastifyInstance,
  agent = 'support-bot',
  name = 'block-drop',
  data: ControlDataInput = sqlControl(),
): Promise<number> {
  const created = await call(app, 'PUT', '/api/v1/controls', { name, data });
  if (created.statusCode !== 201) throw new Error(`seed control: ${created.statusCode} ${created.body}`);
  const id = json(created).control_id as number;
  const init = await call(app, 'POST', '/api/v1/agents/initAgent', { agent_name: agent });
  if (init.statusCode >= 300) throw new Error(`seed agent: ${init.statusCode} ${init.body}`);
  const link = await call(app, 'POST', `/api/v1/agents/${agent}/controls/${id}`);
  if (link.statusCode !== 200) throw new Error(`seed link: ${link.statusCode} ${link.body}`);
  return id;
}

export function step(query: string) {
  return { agent_name: 'support-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query } } };
}
