import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { CompiledControlSet } from '../engine/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import { fieldIssuesOf, type WriteOrigin, type WriteSource } from '../model/index.js';
import type { Observability } from '../observability/index.js';
import type { StepRecorder } from '../recording/recorder.js';
import type { Store } from '../store/types.js';
import type { Tracing } from '../tracing/start.js';
import type { Approvals } from './approvals.js';
import type { ServerConfig } from './config.js';
import type { ControlSetCache } from './control-sets.js';
import type { ServerCounters } from '../counting/index.js';
import type { SessionState } from '../sessions/index.js';
import { invalid, notFound } from './problem.js';

/** What every route plugin receives: the app's own parts, never globals. */
export interface ServerContext {
  store: Store;
  config: ServerConfig;
  registry: EvaluatorRegistry;
  controlSets: ControlSetCache<CompiledControlSet>;
  observability: Observability | undefined;
  /** Where rate and budget controls count (counting/). */
  counters: ServerCounters;
  /** The labels agents' sessions carry (sessions/). */
  sessions: SessionState;
  /** Records evaluated steps for replay; absent when GUARD_RECORD_STEPS is off. */
  recorder?: StepRecorder | null;
  /** OpenTelemetry export; absent when tracing is off (docs/observability.md, "Tracing"). */
  tracing?: Tracing | undefined;
  /** Approvals of asked steps: the evaluation route's gate, long-polls, stream and webhook. */
  approvals: Approvals;
  /** Who a write request is, for history and audit (auth.ts createActorOf). */
  actorOf: (request: FastifyRequest) => string;
}

/** The origin of a write made through the API by `request`. */
export function apiOrigin(ctx: Pick<ServerContext, 'actorOf'>, request: FastifyRequest, source: WriteSource = 'api'): WriteOrigin {
  return { actor: ctx.actorOf(request), source };
}

/** Parses a body or query with a model schema; failures become 422 with exact field paths. */
export function parseOr422<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalid(`the ${what} is not valid`, fieldIssuesOf(parsed.error));
  return parsed.data;
}

/**
 * Ids in paths are positive integers. Anything else cannot name a control, so it answers
 * 404 like any other unknown id (documented in docs/server.md).
 */
export function controlIdOf(raw: string): number {
  if (!/^[1-9]\d{0,15}$/.test(raw)) throw notFound(`no control has id "${raw}"`);
  return Number(raw);
}

/** Controls owned by watch mode are edited in their file, never through the API. */
export function isWatchManaged(managedBy: string | null): boolean {
  return managedBy !== null && managedBy.startsWith('watch:');
}
