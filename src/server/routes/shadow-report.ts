import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import {
  AgentNameSchema,
  modeOf,
  ShadowReportSchema,
  type ControlRecord,
  type ShadowControlReport,
  type ShadowExample,
  type ShadowReport,
} from '../../model/index.js';
import type { Store } from '../../store/types.js';
import { parseOr422 } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { notFound } from '../problem.js';
import { SinceSchema, sinceOf } from './history.js';

/** Example steps per control in a report. */
export const EXAMPLES_PER_CONTROL = 3;

const QuerySchema = z.strictObject({
  since: SinceSchema.optional(),
  agent_name: AgentNameSchema.optional().describe('Only this agent’s controls and steps'),
});

const DOC = {
  operationId: 'getShadowReport',
  summary: 'Each control in shadow mode: steps evaluated, would-deny, would-steer, masked example steps',
  description: 'since defaults to 24h. 404 when agent_name names no registered agent.',
  tag: 'observability',
  query: QuerySchema,
  responses: { 200: ShadowReportSchema },
  errors: [404],
} satisfies OperationDoc;

/**
 * `GET /api/v1/shadow-report?since=24h&agent_name=`: every enabled control in shadow mode
 * with what it did over the window (steps evaluated, would-deny, would-steer, errors) and
 * a few example steps, masked and redacted (src/observability/shadow-examples.ts).
 * Registered with observability: without stored events there is nothing to report.
 */
export const shadowReportRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get('/shadow-report', { config: { access: 'read', openapi: DOC } }, async (request): Promise<ShadowReport> => {
    const query = parseOr422(QuerySchema, request.query, 'query');
    const since = query.since ?? sinceOf('24h')!;
    const agent = query.agent_name ?? null;
    let controls: ControlRecord[];
    if (agent === null) {
      controls = await store.listAllControls();
    } else {
      if ((await store.getAgent(agent)) === null) throw notFound(`agent "${agent}" is not registered`);
      // The controls in force for the agent: its links and every policy selecting it, as evaluation reads them.
      controls = (await store.agentControlSet(agent))?.controls ?? [];
    }
    const shadow = controls.filter((c) => c.enabled && c.data !== null && modeOf(c.data) === 'shadow');
    if (shadow.length === 0) return { since, agent_name: agent, controls: [] };
    const stats = new Map((await store.controlStats({ since, ...(agent === null ? {} : { agent_name: agent }) })).map((r) => [r.control_id, r]));
    const reports = await Promise.all(
      shadow.map(async (c): Promise<ShadowControlReport> => {
        const s = stats.get(c.control_id);
        return {
          control_id: c.control_id,
          control_name: c.name,
          action: c.data!.action.decision,
          evaluated: s?.shadow_executions ?? 0,
          matches: s?.shadow_matches ?? 0,
          would_deny: s?.would_deny ?? 0,
          would_steer: s?.would_steer ?? 0,
          errors: s?.shadow_errors ?? 0,
          examples: await examplesOf(store, c.control_id, since, agent),
        };
      }),
    );
    return { since, agent_name: agent, controls: reports };
  });
};

async function examplesOf(store: Store, controlId: number, since: string, agent: string | null): Promise<ShadowExample[]> {
  const page = await store.queryEvents({
    control_ids: [controlId],
    mode: 'shadow',
    matched: true,
    with_example: true,
    start_time: since,
    limit: EXAMPLES_PER_CONTROL,
    offset: 0,
    ...(agent === null ? {} : { agent_name: agent }),
  });
  return page.events.map((e) => {
    const step = e.example ? (JSON.parse(e.example) as unknown) : null;
    // The name as the example kept it: a control that read the name sees the marker.
    const name = step !== null && typeof step === 'object' ? (step as { name?: unknown }).name : undefined;
    return {
      timestamp: e.timestamp,
      agent_name: e.agent_name,
      stage: e.check_stage,
      step_type: e.applies_to,
      step_name: typeof name === 'string' ? name : '',
      trace_id: e.trace_id,
      step,
    };
  });
}
