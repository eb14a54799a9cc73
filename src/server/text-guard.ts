/**
 * Refuses request text a store cannot keep (NUL, lone surrogates; see model/text.ts) with
 * a 422 naming the field, before any route reads it: path parameters, the query string
 * and the body. One check for every route, so both stores see only text both can store.
 * Routes that store nothing of their body as sent (evaluation, event ingest: events are
 * made storable on the way to the store) opt out of the body check with
 * `config: { bodyText: 'unchecked' }`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { textIssuesOf, type FieldIssue } from '../model/index.js';
import { invalid } from './problem.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `unchecked`: the route's body may hold any text (it is not stored as sent). */
    bodyText?: 'checked' | 'unchecked';
  }
}

/** Path parameters as the API names them in bodies and problem fields. */
const PARAM_FIELDS: Record<string, string> = { name: 'agent_name' };

export function installTextGuard(app: FastifyInstance): void {
  app.addHook('preValidation', async (request: FastifyRequest) => {
    const params = textIssuesOf(renamedParams(request.params));
    if (params.length > 0) throw refused('path', params);
    const query = textIssuesOf(request.query);
    if (query.length > 0) throw refused('query', query);
    if (request.routeOptions.config.bodyText === 'unchecked') return;
    const body = textIssuesOf(request.body);
    if (body.length > 0) throw refused('request body', body);
  });
}

function refused(what: string, issues: FieldIssue[]) {
  return invalid(`the ${what} is not valid: ${issues[0]!.message}`, issues);
}

function renamedParams(params: unknown): unknown {
  if (params === null || typeof params !== 'object') return params;
  return Object.fromEntries(Object.entries(params as Record<string, unknown>).map(([k, v]) => [PARAM_FIELDS[k] ?? k, v]));
}
