import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AgentNameSchema, StageSchema } from '../../model/index.js';
import { parseOr422, type ServerContext } from '../context.js';
import type { OperationDoc } from '../openapi.js';

export const RECORDINGS_DEFAULT_LIMIT = 100;
export const RECORDINGS_MAX_LIMIT = 1000;

const QuerySchema = z.strictObject({
  agent_name: AgentNameSchema.optional(),
  since: z.iso.datetime({ offset: true, message: 'since must be an ISO 8601 time, for example 2025-01-31T00:00:00Z' }).optional(),
  limit: z.coerce.number().int().min(1).max(RECORDINGS_MAX_LIMIT).default(RECORDINGS_DEFAULT_LIMIT),
  cursor: z.coerce.number().int().min(0).optional(),
});

/** A page of recorded steps, oldest first. */
export const RecordingPageSchema = z.strictObject({
  steps: z.array(
    z.strictObject({
      id: z.number().int(),
      timestamp: z.string(),
      agent_name: z.string(),
      stage: StageSchema,
      step: z.unknown().describe('The step as recorded (redacted); replay re-validates it'),
      decision: z.enum(['allow', 'deny', 'steer', 'ask']),
      session_id: z.string().nullable().describe('The step’s session (docs/sessions.md); null without one'),
    }),
  ),
  next_cursor: z.number().int().nullable().describe('Pass as cursor for the next page; null on the last page'),
  recording: z.boolean().describe('Whether this server records steps (GUARD_RECORD_STEPS)'),
});

const DOC = {
  operationId: 'listRecordings',
  summary: 'Recorded steps for replay, oldest first (GUARD_RECORD_STEPS; cursor-based)',
  tag: 'recordings',
  query: QuerySchema,
  responses: { 200: RecordingPageSchema },
} satisfies OperationDoc;

/**
 * `GET /api/v1/recordings`: the steps the server recorded (GUARD_RECORD_STEPS), oldest
 * first, for `guardctl plan --replay`. Read access: the steps are already redacted.
 */
export const recordingRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  app.get('/recordings', { config: { access: 'read', openapi: DOC } }, async (request) => {
    const query = parseOr422(QuerySchema, request.query, 'recordings query');
    const page = await ctx.store.queryRecordedSteps({
      agent_name: query.agent_name,
      since: query.since,
      limit: query.limit,
      cursor: query.cursor,
    });
    return { steps: page.steps, next_cursor: page.next_cursor, recording: ctx.config.recordSteps };
  });
};
