/**
 * Refuses request text a store cannot keep (NUL, lone surrogates; see model/text.ts) with
 * a 422 naming the field, before any route reads it: path parameters, the query string
 * and the body. One check for every route, so both stores see only text both can store.
 * Routes that store nothing of their body as sent (evaluation, event ingest: events are
 * made storable on the way to the store) opt out of the body check with
 * `config: { bodyText: 'unchecked' }`.
 */
import type { FastifyInstance, FastifyRequest, RouteOptions, preValidationHookHandler } from 'fastify';
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

/**
 * Adds the check to every route registered after this call, as the route's first
 * preValidation hook. Built per route, it knows whether the route has path parameters
 * and checks its body: a global hook would read `request.routeOptions` on every
 * request, a getter that builds a dozen-field object each time.
 */
export function installTextGuard(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const guard = textGuardOf(/[:*]/.test(route.url), route.config?.bodyText !== 'unchecked');
    const own = route.preValidation;
    route.preValidation = own === undefined ? [guard] : [guard, ...(Array.isArray(own) ? own : [own])];
  });
}

function textGuardOf(hasParams: boolean, checksBody: boolean): preValidationHookHandler {
  return (request: FastifyRequest, _reply, done) => {
    done(textRefusal(request, hasParams, checksBody));
  };
}

function textRefusal(request: FastifyRequest, hasParams: boolean, checksBody: boolean): Error | undefined {
  if (hasParams) {
    const params = textIssuesOf(renamedParams(request.params));
    if (params.length > 0) return refused('path', params);
  }
  // Most requests have no query string: Fastify parses it to an empty object.
  if (hasKeys(request.query)) {
    const query = textIssuesOf(request.query);
    if (query.length > 0) return refused('query', query);
  }
  if (checksBody) {
    const body = textIssuesOf(request.body);
    if (body.length > 0) return refused('request body', body);
  }
  return undefined;
}

function hasKeys(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return value !== undefined;
  for (const _ in value) return true;
  return false;
}

function refused(what: string, issues: FieldIssue[]) {
  return invalid(`the ${what} is not valid: ${issues[0]!.message}`, issues);
}

function renamedParams(params: unknown): unknown {
  if (params === null || typeof params !== 'object') return params;
  return Object.fromEntries(Object.entries(params as Record<string, unknown>).map(([k, v]) => [PARAM_FIELDS[k] ?? k, v]));
}
