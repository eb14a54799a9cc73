import { z } from 'zod';
import { AGENT_NAME_MAX, ControlModeSchema, DecisionSchema, ObservabilityEventSchema, SessionIdSchema, StageSchema } from '../model/index.js';

export const MAX_INGEST_BATCH = 1000;
export const DEFAULT_QUERY_LIMIT = 100;
export const MAX_QUERY_LIMIT = 1000;
/** Deep offsets make the database skip that many rows; narrow the time window instead. */
export const MAX_QUERY_OFFSET = 100_000;

export const TIME_RANGES = ['1m', '5m', '15m', '1h', '24h', '7d', '30d'] as const;
export type TimeRange = (typeof TIME_RANGES)[number];

const MINUTE = 60_000;
const RANGE_MS: Record<TimeRange, number> = {
  '1m': MINUTE,
  '5m': 5 * MINUTE,
  '15m': 15 * MINUTE,
  '1h': 60 * MINUTE,
  '24h': 24 * 60 * MINUTE,
  '7d': 7 * 24 * 60 * MINUTE,
  '30d': 30 * 24 * 60 * MINUTE,
};

export function timeRangeMs(range: TimeRange): number {
  return RANGE_MS[range];
}

/** An event as clients send it: `error_message` and `metadata` may be left out (null). */
export const IngestEventSchema = ObservabilityEventSchema.extend({
  error_message: ObservabilityEventSchema.shape.error_message.default(null),
  metadata: ObservabilityEventSchema.shape.metadata.default(null),
});

/** `POST /observability/events`: 1 to 1000 events; one bad event rejects the batch. */
export const IngestBodySchema = z.strictObject({
  events: z
    .array(IngestEventSchema)
    .min(1, 'send at least one event')
    .max(MAX_INGEST_BATCH, `send at most ${MAX_INGEST_BATCH} events per request`),
});

const isoTime = z.iso.datetime({ offset: true });

/** `POST /observability/events/query`. */
export const EventQueryBodySchema = z
  .strictObject({
    agent_name: z.string().min(1).max(AGENT_NAME_MAX).optional(),
    control_ids: z.array(z.number().int()).min(1).max(1000).optional(),
    actions: z.array(DecisionSchema).min(1).optional(),
    matched: z.boolean().optional(),
    stages: z.array(StageSchema).min(1).optional(),
    trace_id: z.string().min(1).max(128).optional(),
    /** Only events of steps of this session (any agent's; add agent_name for one agent's). */
    session_id: SessionIdSchema.optional(),
    /** Only events of controls in this mode (`shadow`: what shadow controls would have done). */
    mode: ControlModeSchema.optional(),
    /** Inclusive. */
    start_time: isoTime.optional(),
    /** Exclusive. */
    end_time: isoTime.optional(),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_QUERY_LIMIT, `limit must be at most ${MAX_QUERY_LIMIT}`)
      .default(DEFAULT_QUERY_LIMIT),
    offset: z
      .number()
      .int()
      .min(0)
      .max(MAX_QUERY_OFFSET, `offset must be at most ${MAX_QUERY_OFFSET}; narrow start_time/end_time instead`)
      .default(0),
  })
  .superRefine((q, ctx) => {
    if (q.start_time && q.end_time && Date.parse(q.start_time) > Date.parse(q.end_time)) {
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'end_time must not be before start_time' });
    }
  });
export type EventQueryBody = z.infer<typeof EventQueryBodySchema>;

const timeRange = z.enum(TIME_RANGES, {
  error: () => `time_range must be one of ${TIME_RANGES.join(', ')}`,
});

/** Query string of `GET /observability/stats` and `/stats/controls/{id}`. */
export const StatsQuerySchema = z.strictObject({
  agent_name: z.string().min(1).max(AGENT_NAME_MAX).optional(),
  time_range: timeRange.default('24h'),
});

const decisionList = z
  .string()
  .transform((s) => s.split(',').map((d) => d.trim()).filter((d) => d !== ''))
  .pipe(z.array(z.enum(['allow', 'deny', 'steer', 'ask'], { error: () => 'decision must be a comma list of allow, deny, steer, ask' })).min(1));

/** Query string of `GET /observability/events/stream`. */
export const StreamQuerySchema = z.strictObject({
  agent_name: z.string().min(1).max(AGENT_NAME_MAX).optional(),
  decision: decisionList.optional(),
  session_id: SessionIdSchema.optional(),
});
