import type { FastifyPluginAsync } from 'fastify';
import { fieldIssuesOf, normaliseAgentName } from '../../model/index.js';
import { counterUseOf, type CounterUse, type CounterUseSource, type Observability, type ObservabilityConfig } from '../../observability/index.js';
import {
  EventQueryBodySchema,
  IngestBodySchema,
  StatsQuerySchema,
  StreamQuerySchema,
  timeRangeMs,
} from '../../observability/schemas.js';
import { emptyStatsRow } from '../../store/records.js';
import type { ControlStatsRow, EventStore, Store } from '../../store/types.js';
import type { Access } from '../auth.js';
import { controlIdOf } from '../context.js';
import { sendError, sendValidationProblem } from '../problem.js';

export interface ObservabilityRoutesOptions {
  observability: Observability;
  store: EventStore & Pick<Store, 'getControl'>;
  config: ObservabilityConfig;
  /** Rate and budget counters: their current use is part of the stats. */
  counters?: CounterUseSource;
  controlName?: (controlId: number) => Promise<string | undefined>;
}

interface StatsTotals {
  executions: number;
  matches: number;
  non_matches: number;
  errors: number;
  selector_missing: number;
  actions: Record<string, number>;
}

function totalsOf(rows: readonly ControlStatsRow[]): StatsTotals {
  const totals: StatsTotals = { executions: 0, matches: 0, non_matches: 0, errors: 0, selector_missing: 0, actions: {} };
  for (const row of rows) {
    totals.executions += row.executions;
    totals.matches += row.matches;
    totals.non_matches += row.non_matches;
    totals.errors += row.errors;
    totals.selector_missing += row.selector_missing;
    for (const [action, n] of Object.entries(row.actions)) totals.actions[action] = (totals.actions[action] ?? 0) + n;
  }
  return totals;
}

/**
 * The observability endpoints, registered under `/api/v1`: ingest, query, stats and the
 * live stream. Bodies and query strings are checked with strict schemas; every 422 names
 * its fields.
 */
export const observabilityRoutes: FastifyPluginAsync<ObservabilityRoutesOptions> = async (app, opts) => {
  const { observability, store } = opts;
  /** The counters' current use (most used first), or null when they cannot be read (database away). */
  const counterUse = async (filter: { control_id?: number } = {}): Promise<CounterUse[] | null> => {
    if (!opts.counters || !opts.controlName) return [];
    try {
      return await counterUseOf(opts.counters, opts.controlName, filter);
    } catch (error) {
      app.log.warn({ err: error }, 'reading rate and budget counters failed');
      return null;
    }
  };

  // Live streams never end on their own; end them before the server waits for its sockets.
  app.addHook('preClose', (done) => {
    observability.hub.close();
    done();
  });

  app.post('/observability/events', { config: { access: 'read' } }, async (request, reply) => {
    const parsed = IngestBodySchema.safeParse(request.body);
    if (!parsed.success) return sendValidationProblem(reply, 'events batch', fieldIssuesOf(parsed.error));
    return reply.code(202).send(observability.ingest(parsed.data.events));
  });

  app.post('/observability/events/query', { config: { access: 'read' } }, async (request, reply) => {
    const parsed = EventQueryBodySchema.safeParse(request.body ?? {});
    if (!parsed.success) return sendValidationProblem(reply, 'events query', fieldIssuesOf(parsed.error));
    const q = parsed.data;
    const page = await store.queryEvents({
      ...q,
      agent_name: q.agent_name === undefined ? undefined : normaliseAgentName(q.agent_name),
    });
    // The shadow-report example stays out of the event schema (GET /shadow-report shows it).
    const events = page.events.map(({ example: _example, ...event }) => event);
    return { events, total: page.total, limit: q.limit, offset: q.offset };
  });

  app.get('/observability/stats', { config: { access: 'read' } }, async (request, reply) => {
    const parsed = StatsQuerySchema.safeParse(request.query);
    if (!parsed.success) return sendValidationProblem(reply, 'stats query', fieldIssuesOf(parsed.error));
    const { time_range } = parsed.data;
    const agent_name = parsed.data.agent_name === undefined ? null : normaliseAgentName(parsed.data.agent_name);
    const since = new Date(Date.now() - timeRangeMs(time_range)).toISOString();
    const controls = await store.controlStats({ since, ...(agent_name === null ? {} : { agent_name }) });
    return { agent_name, time_range, totals: totalsOf(controls), controls, counters: await counterUse() };
  });

  app.get('/observability/stats/controls/:control_id', { config: { access: 'read' } }, async (request, reply) => {
    const control_id = controlIdOf((request.params as { control_id: string }).control_id);
    const parsed = StatsQuerySchema.safeParse(request.query);
    if (!parsed.success) return sendValidationProblem(reply, 'stats query', fieldIssuesOf(parsed.error));
    const control = await store.getControl(control_id);
    if (!control) {
      return sendError(reply, 404, 'not_found', `no control has id "${control_id}"`);
    }
    const { time_range } = parsed.data;
    const agent_name = parsed.data.agent_name === undefined ? null : normaliseAgentName(parsed.data.agent_name);
    const since = new Date(Date.now() - timeRangeMs(time_range)).toISOString();
    const rows = await store.controlStats({ since, control_id, ...(agent_name === null ? {} : { agent_name }) });
    const stats = rows.find((r) => r.control_id === control_id) ?? emptyStatsRow(control_id, control.name);
    return { control_id, control_name: control.name, agent_name, time_range, stats, counters: await counterUse({ control_id }) };
  });

  app.get('/observability/events/stream', { config: { access: 'read' } }, async (request, reply) => {
    const parsed = StreamQuerySchema.safeParse(request.query);
    if (!parsed.success) return sendValidationProblem(reply, 'stream filter', fieldIssuesOf(parsed.error));
    const { hub } = observability;
    const filter = {
      agent_name: parsed.data.agent_name === undefined ? undefined : normaliseAgentName(parsed.data.agent_name),
      decisions: parsed.data.decision === undefined ? undefined : new Set(parsed.data.decision),
    };
    const res = reply.raw;
    // Reserve the slot before hijacking so a full hub still answers with a problem body.
    const sub = hub.subscribe(res, filter);
    if (!sub) {
      return sendError(reply, 503, 'unavailable', 'too many live stream subscribers; try again later');
    }
    reply.hijack();
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    // Flushes the headers at once so clients see the stream open before the first event.
    res.write(': connected\n\nretry: 3000\n\n');
    const cleanup = () => hub.unsubscribe(sub);
    request.raw.once('close', cleanup);
    res.once('close', cleanup);
    res.once('error', cleanup);
  });
};

/** `GET /metrics`: Prometheus text from the app's own registry. Public unless METRICS_REQUIRE_KEY. */
export const metricsRoutes: FastifyPluginAsync<{ observability: Observability; access?: Access }> = async (app, opts) => {
  const { observability, access = 'public' } = opts;
  const { registry } = observability.metrics;
  app.get('/metrics', { config: { access } }, async (_request, reply) => {
    // Evaluations answered earlier in this event-loop turn are counted before the scrape.
    observability.settle();
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
};
