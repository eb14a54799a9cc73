import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { AgentNameSchema, SessionIdSchema, SessionInfoSchema } from '../../model/index.js';
import { parseOr422, type ServerContext } from '../context.js';
import type { OperationDoc } from '../openapi.js';
import { notFound } from '../problem.js';

const SessionQuerySchema = z.strictObject({ agent_name: AgentNameSchema.describe('The agent whose session it is (sessions are per agent)') });

const DOC = {
  operationId: 'getSession',
  summary: 'A session’s labels (with the control and step that added each), step count, first and last seen',
  description: '404 when the agent has no such session, or it expired (GUARD_SESSION_TTL after its last step). docs/sessions.md.',
  tag: 'evaluation',
  query: SessionQuerySchema,
  responses: { 200: SessionInfoSchema },
  errors: [404],
} satisfies OperationDoc;

/** `GET /api/v1/sessions/{id}?agent_name=`: what the server keeps of one session (docs/sessions.md). */
export const sessionRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  app.get<{ Params: { session_id: string } }>('/sessions/:session_id', { config: { access: 'read', openapi: DOC } }, async (request) => {
    const { agent_name } = parseOr422(SessionQuerySchema, request.query, 'query string');
    const id = SessionIdSchema.safeParse(request.params.session_id);
    const info = id.success ? await ctx.sessions.info(agent_name, id.data) : null;
    if (info === null) throw notFound(`agent "${agent_name}" has no session "${request.params.session_id.slice(0, 128)}" (unknown or expired)`);
    return info;
  });
};
