import type { FastifyPluginAsync } from 'fastify';
import type { ReloadStatusSource } from '../../reload/index.js';
import { notFound } from '../problem.js';

export interface ReloadRoutesOptions {
  /** Present when the server runs with `--watch`. */
  reload?: ReloadStatusSource | undefined;
}

/** `GET /api/v1/reload/status`: the watched directory's state (last good revision, current errors). */
export const reloadRoutes: FastifyPluginAsync<ReloadRoutesOptions> = async (app, options) => {
  app.get('/reload/status', { config: { access: 'read' } }, async () => {
    const status = options.reload?.status() ?? null;
    if (status === null) throw notFound('the server is not watching a controls directory; start it with guardctl serve --watch DIR');
    return status;
  });
};
