import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { ChangeEntrySchema, ControlRecordSchema } from '../../model/index.js';
import type { ChangePage, RestoreRefusal } from '../../store/history.js';
import { controlIdOf, isWatchManaged, parseOr422, type ServerContext } from '../context.js';
import { HttpProblem, notFound } from '../problem.js';
import type { OperationDoc } from '../openapi.js';
import { DEFAULT_PAGE_SIZE, pageCursor, pageLimit } from '../schemas.js';

/** `GET /controls/{id}/history?cursor&limit`. */
export const HistoryQuerySchema = z.strictObject({ cursor: pageCursor(), limit: pageLimit() });

const DURATION = /^(\d{1,6})(m|h|d)$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** An ISO time, or a duration back from now (`90m`, `24h`, `7d`); undefined when it is neither. */
export function sinceOf(text: string, now = Date.now()): string | undefined {
  const duration = DURATION.exec(text);
  if (duration) return new Date(now - Number(duration[1]) * UNIT_MS[duration[2] as keyof typeof UNIT_MS]).toISOString();
  return z.iso.datetime({ offset: true }).safeParse(text).success ? new Date(text).toISOString() : undefined;
}

/** A `since` query parameter: ISO time or a duration back from now. */
export const SinceSchema = z
  .string()
  .describe('An ISO 8601 time, or a duration back from now: 30m, 24h, 7d')
  .transform((text, ctx) => {
    const since = sinceOf(text);
    if (since === undefined) {
      ctx.addIssue({ code: 'custom', message: 'since must be an ISO 8601 time or a duration such as 30m, 24h or 7d' });
      return z.NEVER;
    }
    return since;
  });

/** `GET /audit?since&actor&cursor&limit`. */
export const AuditQuerySchema = z.strictObject({
  since: SinceSchema.optional(),
  actor: z.string().min(1).max(300).optional().describe('Only writes by this actor (admin:<fingerprint>, watch:<dir>, anonymous, ...)'),
  cursor: pageCursor(),
  limit: pageLimit(),
});

/** `POST /controls/{id}/restore`. */
export const RestoreBodySchema = z.strictObject({ revision: z.number().int().nonnegative() });

const ChangePaginationSchema = z.strictObject({
  limit: z.number().int(),
  next_cursor: z.number().int().nullable().describe('Pass as cursor for the next page; null on the last page'),
  has_more: z.boolean(),
});

/** `GET /audit`: every write, newest first. */
export const AuditPageSchema = z.strictObject({ entries: z.array(ChangeEntrySchema), pagination: ChangePaginationSchema });

/** `GET /controls/{id}/history`: the control's revisions, newest first. */
export const ControlHistorySchema = AuditPageSchema.extend({ control_id: z.number().int().positive() });

/** `POST /controls/{id}/restore`. */
export const RestoreResultSchema = z.strictObject({
  restored: z.boolean().describe('false when the control already was as at that revision'),
  recreated: z.boolean().describe('true when the control had been deleted and is back'),
  revision: z.number().int(),
  control: ControlRecordSchema,
});

const DOCS = {
  history: {
    operationId: 'getControlHistory',
    summary: 'The control’s revisions, newest first (kept after it is deleted; cursor-based)',
    tag: 'history',
    query: HistoryQuerySchema,
    responses: { 200: ControlHistorySchema },
  },
  restore: {
    operationId: 'restoreControl',
    summary: 'Put a hand-managed control back as it was at a revision',
    description: '409 for controls managed by apply or watch mode, and for revisions that cannot be restored.',
    tag: 'history',
    body: RestoreBodySchema,
    responses: { 200: RestoreResultSchema },
    errors: [409],
  },
  audit: {
    operationId: 'getAuditLog',
    summary: 'Every write to controls, agents and links, newest first (cursor-based)',
    tag: 'history',
    query: AuditQuerySchema,
    responses: { 200: AuditPageSchema },
  },
} satisfies Record<string, OperationDoc>;

function pageOf(page: ChangePage, size: number) {
  return { entries: page.entries, pagination: { limit: size, next_cursor: page.next_cursor, has_more: page.next_cursor !== null } };
}

/**
 * History and audit (docs/server.md): a control's revisions (read access, kept after the
 * control is deleted), restoring one (admin, hand-managed controls only), and the audit
 * log of every write (admin).
 */
export const historyRoutes: FastifyPluginAsync<ServerContext> = async (app, ctx) => {
  const { store, controlSets } = ctx;

  app.get<{ Params: { control_id: string } }>('/controls/:control_id/history', { config: { access: 'read', openapi: DOCS.history } }, async (request) => {
    const id = controlIdOf(request.params.control_id);
    const query = parseOr422(HistoryQuerySchema, request.query, 'query');
    const size = query.limit ?? DEFAULT_PAGE_SIZE;
    const page = await store.controlHistory(id, { cursor: query.cursor, limit: size });
    // A control that never existed has no history; a deleted one keeps its own.
    if (page.entries.length === 0 && query.cursor === undefined && (await store.getControl(id)) === null) {
      throw notFound(`no control has id ${id}, and none ever had`);
    }
    return { control_id: id, ...pageOf(page, size) };
  });

  app.post<{ Params: { control_id: string } }>('/controls/:control_id/restore', { config: { access: 'admin', openapi: DOCS.restore } }, async (request) => {
    const id = controlIdOf(request.params.control_id);
    const { revision } = parseOr422(RestoreBodySchema, request.body, 'request body');
    const outcome = await store.restoreControl(id, revision, { actor: ctx.actorOf(request), source: 'api' });
    if (!outcome.ok) throw refusalProblem(id, revision, outcome);
    controlSets.invalidate(await store.agentsOfControl(id));
    return { restored: outcome.changed, recreated: outcome.recreated, revision, control: outcome.control };
  });

  app.get('/audit', { config: { access: 'admin', openapi: DOCS.audit } }, async (request) => {
    const query = parseOr422(AuditQuerySchema, request.query, 'query');
    const size = query.limit ?? DEFAULT_PAGE_SIZE;
    const page = await store.auditLog({ since: query.since, actor: query.actor, cursor: query.cursor, limit: size });
    return pageOf(page, size);
  });
};

/** Each refusal as its status, with what to do instead. */
function refusalProblem(id: number, revision: number, refusal: RestoreRefusal): HttpProblem {
  switch (refusal.reason) {
    case 'no_revision':
      return notFound(`control ${id} has no revision ${revision}; GET /api/v1/controls/${id}/history lists its revisions`);
    case 'managed': {
      const where = refusal.source ? refusal.source.replace(/:\d+$/, '') : null;
      const then = isWatchManaged(refusal.managed_by) ? 'the watched directory reloads it' : 'apply it again';
      const file = where ? `revert the change to ${where} in git; ${then}` : `revert the change in the directory that owns it; ${then}`;
      return new HttpProblem(
        409,
        'read_only',
        `control "${refusal.name}" is managed by ${refusal.managed_by}${where ? ` (defined in ${refusal.source})` : ''}: ${file}`,
      );
    }
    case 'deleted_at_revision':
      return new HttpProblem(409, 'conflict', `revision ${revision} deleted control ${id}${refusal.name ? ` ("${refusal.name}")` : ''}; restore a revision before it`);
    case 'name_taken':
      return new HttpProblem(409, 'conflict', `control ${id} was deleted and another control now holds its name "${refusal.name}"; rename or delete that one first`);
  }
}
