import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { fieldIssuesOf, normaliseAgentName, ObservabilityEventSchema, type ObservabilityEvent } from '../../model/index.js';
import { counterUseOf, type CounterUse, type CounterUseSource, type Observability, type ObservabilityConfig } from '../../observability/index.js';
import {
  EventQueryBodySchema,
  IngestBodySchema,
  StatsQuerySchema,
  StreamQuerySchema,
  TIME_RANGES,
  timeRangeMs,
} from '../../observability/schemas.js';
import { isNonMatch } from '../../observability/record.js';
import { emptyStatsRow } from '../../store/records.js';
import type { ControlStatsRow, EventStore, Store } from '../../store/types.js';
import type { Access } from '../auth.js';
import { controlIdOf } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { serverRunControlsOf } from '../server-run-controls.js';
import { sendError, sendValidationProblem } from '../problem.js';

export interface ObservabilityRoutesOptions {
  observability: Observability;
  store: EventStore & Pick<Store, 'getControl' | 'listAllControls'>;
  config: ObservabilityConfig;
  /** Rate and budget counters: their current use is part of the stats. */
  counters?: CounterUseSource;
  controlName?: (controlId: number) => Promise<string | undefined>;
}

const count = z.number().int().nonnegative();

type IngestEvent = z.input<typeof IngestBodySchema>['events'][number];

/**
 * The events of a batch that passed the compiled schema check, with zod's defaults filled
 * in; null when only zod can say (a duration JSON read as Infinity, which the schema's
 * `number` lets through and zod refuses).
 */
function checkedEvents(body: unknown): ObservabilityEvent[] | null {
  const events = (body as { events: IngestEvent[] }).events;
  for (const e of events) {
    if (!Number.isFinite(e.execution_duration_ms)) return null;
    e.error_message ??= null;
    e.metadata ??= null;
  }
  return events as ObservabilityEvent[];
}

/** Figures per action (allow, deny, steer, warn, log) of the matches counted. */
const ActionCountsSchema = z.record(z.string(), count);

const StatsTotalsSchema = z.strictObject({
  executions: count,
  matches: count,
  non_matches: count,
  errors: count,
  selector_missing: count.describe('Non-matches whose selector found nothing in the step (included in non_matches)'),
  actions: ActionCountsSchema,
});
type StatsTotals = z.infer<typeof StatsTotalsSchema>;

/** One control's figures over the window (store/types.ts ControlStatsRow). */
const ControlStatsRowSchema = StatsTotalsSchema.extend({
  control_id: z.number().int(),
  control_name: z.string(),
  avg_duration_ms: z.number().nonnegative(),
  shadow_executions: count.describe('Of the counts above, evaluations made in shadow mode'),
  shadow_matches: count,
  shadow_errors: count,
  would_deny: count.describe('Shadow matches that would have denied'),
  would_steer: count.describe('Shadow matches that would have steered'),
});

const timeRange = z.enum(TIME_RANGES);

/** Rate and budget use per control and key (docs/evaluators.md); null when the counters cannot be read. */
const CountersSchema = z
  .array(
    z.strictObject({
      control_id: z.number().int(),
      control_name: z.string(),
      counter: z.string(),
      key: z.string(),
      kind: z.enum(['rate', 'budget']),
      window_ms: z.number(),
      used: z.number(),
      limit: z.number(),
      ratio: z.number(),
    }),
  )
  .nullable();

/** `GET /observability/stats`. */
export const AgentStatsSchema = z.strictObject({
  agent_name: z.string().nullable().describe('null: every agent'),
  time_range: timeRange,
  totals: StatsTotalsSchema,
  controls: z.array(ControlStatsRowSchema),
  counters: CountersSchema,
});

/** `GET /observability/stats/controls/{control_id}`. */
export const ControlStatsSchema = z.strictObject({
  control_id: z.number().int(),
  control_name: z.string(),
  agent_name: z.string().nullable(),
  time_range: timeRange,
  stats: ControlStatsRowSchema,
  counters: CountersSchema,
});

const DOCS = {
  ingest: {
    operationId: 'ingestEvents',
    summary: 'Record events (1 to 1000)',
    description: 'Events are buffered and written at the flush interval; dropped counts events the full buffer refused.',
    tag: 'observability',
    body: IngestBodySchema,
    responses: { 202: z.strictObject({ received: count, enqueued: count, dropped: count }) },
    storeless: true,
  },
  query: {
    operationId: 'queryEvents',
    summary: 'Query stored events',
    tag: 'observability',
    body: EventQueryBodySchema,
    bodyOptional: true,
    responses: {
      200: z.strictObject({ events: z.array(ObservabilityEventSchema), total: count, limit: z.number().int(), offset: z.number().int() }),
    },
  },
  stats: {
    operationId: 'getStats',
    summary: 'Statistics per control, for one agent or all',
    tag: 'observability',
    query: StatsQuerySchema,
    responses: { 200: AgentStatsSchema },
  },
  controlStats: {
    operationId: 'getControlStats',
    summary: 'Statistics for one control',
    tag: 'observability',
    query: StatsQuerySchema,
    responses: { 200: ControlStatsSchema },
  },
  stream: {
    operationId: 'streamEvents',
    summary: 'Live evaluations (Server-Sent Events)',
    description:
      'A text/event-stream that stays open: `event: evaluation` with an evaluation summary as data for each step ' +
      'evaluated, and `event: reload` when watch mode reloads. 503 when too many clients are subscribed.',
    tag: 'observability',
    query: StreamQuerySchema,
    responses: {
      200: { description: 'The event stream', mediaType: 'text/event-stream', jsonSchema: { type: 'string' } },
    },
    errors: [503],
    storeless: true,
  },
} satisfies Record<string, OperationDoc>;

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

  // A batch of 1,000 events is checked by Fastify's validator compiled from the same zod
  // schema, a fraction of zod's cost; zod runs only when that check fails, to word the 422.
  const { $schema: _unused, ...ingestBodySchema } = z.toJSONSchema(IngestBodySchema, { io: 'input' });
  const serverRunControls = serverRunControlsOf(opts.store);
  app.post(
    '/observability/events',
    { config: { access: 'read', bodyText: 'unchecked', openapi: DOCS.ingest }, schema: { body: ingestBodySchema }, attachValidation: true },
    async (request, reply) => {
      let events = request.validationError === undefined ? checkedEvents(request.body) : null;
      if (events === null) {
        const parsed = IngestBodySchema.safeParse(request.body);
        if (!parsed.success) return sendValidationProblem(reply, 'events batch', fieldIssuesOf(parsed.error));
        events = parsed.data.events;
      }
      const miscounted = events.findIndex((e) => e.count !== undefined && !isNonMatch(e));
      if (miscounted >= 0) {
        return sendValidationProblem(reply, 'events batch', [
          { field: `events[${miscounted}].count`, code: 'invalid_value', message: 'count is only for a rollup of non-matches (matched false, no error_message, no selector_missing)' },
        ]);
      }
      // Events of controls the server runs are the server's to write (server-run-controls.ts).
      const serverRun = await serverRunControls(events.map((e) => e.control_id));
      const kept = serverRun.size === 0 ? events : events.filter((e) => !serverRun.has(e.control_id));
      const refused = events.length - kept.length;
      if (refused > 0) observability.metrics.eventsDropped.inc({ reason: 'server_control' }, refused);
      const answer = observability.ingest(kept);
      return reply.code(202).send({ received: events.length, enqueued: answer.enqueued, dropped: answer.dropped + refused });
    },
  );

  app.post('/observability/events/query', { config: { access: 'read', openapi: DOCS.query } }, async (request, reply) => {
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

  app.get('/observability/stats', { config: { access: 'read', openapi: DOCS.stats } }, async (request, reply) => {
    const parsed = StatsQuerySchema.safeParse(request.query);
    if (!parsed.success) return sendValidationProblem(reply, 'stats query', fieldIssuesOf(parsed.error));
    const { time_range } = parsed.data;
    const agent_name = parsed.data.agent_name === undefined ? null : normaliseAgentName(parsed.data.agent_name);
    const since = new Date(Date.now() - timeRangeMs(time_range)).toISOString();
    const controls = await store.controlStats({ since, ...(agent_name === null ? {} : { agent_name }) });
    return { agent_name, time_range, totals: totalsOf(controls), controls, counters: await counterUse() };
  });

  app.get('/observability/stats/controls/:control_id', { config: { access: 'read', openapi: DOCS.controlStats } }, async (request, reply) => {
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

  app.get('/observability/events/stream', { config: { access: 'read', openapi: DOCS.stream } }, async (request, reply) => {
    const parsed = StreamQuerySchema.safeParse(request.query);
    if (!parsed.success) return sendValidationProblem(reply, 'stream filter', fieldIssuesOf(parsed.error));
    const { hub } = observability;
    const filter = {
      agent_name: parsed.data.agent_name === undefined ? undefined : normaliseAgentName(parsed.data.agent_name),
      decisions: parsed.data.decision === undefined ? undefined : new Set(parsed.data.decision),
      session_id: parsed.data.session_id,
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
  const doc = {
    operationId: 'getMetrics',
    summary: 'Prometheus metrics (text exposition format)',
    tag: 'system',
    responses: { 200: { description: 'Metrics in the Prometheus text format', mediaType: 'text/plain', jsonSchema: { type: 'string' } } },
  } satisfies OperationDoc;
  app.get('/metrics', { config: { access, openapi: doc } }, async (_request, reply) => {
    // Evaluations answered earlier in this event-loop turn are counted before the scrape.
    observability.settle();
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
};
