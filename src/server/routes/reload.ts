import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { ReloadStatusSource } from '../../reload/index.js';
import type { OperationDoc } from '../openapi.js';
import { notFound } from '../problem.js';

/** A problem found in the watched directory (gitops/diagnostics.ts). */
const DiagnosticSchema = z.strictObject({
  severity: z.enum(['error', 'warning']),
  file: z.string(),
  line: z.number().int(),
  column: z.number().int(),
  endLine: z.number().int().optional(),
  endColumn: z.number().int().optional(),
  field: z.string(),
  message: z.string(),
  hint: z.string(),
  code: z.string(),
});

/** `GET /reload/status` (reload/reloader.ts ReloadStatus). */
export const ReloadStatusSchema = z.strictObject({
  watching: z.string(),
  state: z.enum(['ok', 'error']).describe('error while the directory on disk is invalid (the last good set is served)'),
  last_good_revision: z.string().nullable(),
  last_reload_at: z.string().nullable(),
  last_success_at: z.string().nullable(),
  reloads: z.strictObject({ success: z.number().int(), failure: z.number().int() }),
  errors: z.array(DiagnosticSchema),
  pending_removals: z.number().int().nonnegative().describe('Removals (control deletions, unlinks) planned but waiting for confirmation'),
});

const DOC = {
  operationId: 'getReloadStatus',
  summary: 'Watch mode: the watched directory’s state (last good revision, current errors)',
  description: '404 when the server is not watching a directory.',
  tag: 'reload',
  responses: { 200: ReloadStatusSchema },
  errors: [404],
  storeless: true,
} satisfies OperationDoc;

export interface ReloadRoutesOptions {
  /** Present when the server runs with `--watch`. */
  reload?: ReloadStatusSource | undefined;
}

/** `GET /api/v1/reload/status`: the watched directory's state (last good revision, current errors). */
export const reloadRoutes: FastifyPluginAsync<ReloadRoutesOptions> = async (app, options) => {
  app.get('/reload/status', { config: { access: 'read', openapi: DOC } }, async () => {
    const status = options.reload?.status() ?? null;
    if (status === null) throw notFound('the server is not watching a controls directory; start it with guardctl serve --watch DIR');
    return status;
  });
};
