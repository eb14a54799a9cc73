/** What `init` and `control()` take, and the logger and step shapes they name. */
import type { JsonObject, StepDecl, StepType } from '../model/index.js';
import type { EvaluatorRegistry } from '../evaluators/registry.js';
import type { TracerLike } from '../tracing/types.js';
import type { Disclosure } from './verdict.js';

export type FailMode = 'closed' | 'open';

export interface GuardLogger {
  info(message: string): void;
  warn(message: string): void;
}

/**
 * A step as callers give it: `context` and `output` are optional. A step with no input
 * (a tool called with no argument) is checked with the input null.
 */
export interface StepInput {
  type: StepType;
  name: string;
  input?: unknown;
  output?: unknown;
  context?: JsonObject;
}

export interface GuardAgentOptions {
  agentName: string;
  serverUrl: string;
  apiKey?: string | undefined;
  agentDescription?: string | undefined;
  agentVersion?: string | undefined;
  /** The tools and models this agent declares at registration. */
  steps?: StepDecl[] | undefined;
  agentMetadata?: JsonObject | undefined;
  /**
   * Kubernetes-style labels sent at registration. Policies whose selectors match guard the
   * agent from its first evaluation; a label left out keeps what the server has.
   */
  labels?: Record<string, string> | undefined;
  /** Registration conflict mode (default `overwrite`). */
  conflictMode?: 'strict' | 'overwrite' | undefined;
  /**
   * Start even when no control is in force for the agent (unknown to the server, none
   * linked, or all disabled or in shadow mode). Default false: `init` raises
   * UnguardedAgentError, as a misspelt name is the usual cause.
   */
  allowUnguarded?: boolean | undefined;
  /** Background refresh of the agent's controls; 0 disables. Default 60. */
  refreshIntervalSeconds?: number | undefined;
  /** Bound on every request to the server. Default 30000. */
  timeoutMs?: number | undefined;
  /**
   * What a check does when it needs the server and cannot get a valid answer (or a
   * control in scope cannot be compiled here): `closed` (default) raises
   * GuardUnavailableError, `open` logs a warning and lets the step go on.
   */
  failMode?: FailMode | undefined;
  /**
   * How much of the deciding control the text a model reads may reveal (error messages,
   * verdict.message): `minimal` (default), `name` or `full`. See verdict.ts.
   */
  disclosure?: Disclosure | undefined;
  /**
   * A step an ask control holds for a person (docs/approvals.md): `wait` (default) holds
   * `check` and `control()` until the approval is decided, then runs the call or raises
   * ApprovalError (denied, expired); `throw` raises ApprovalError (pending, with its id) at once.
   */
  approval?: 'wait' | 'throw' | undefined;
  /** With `approval: 'wait'`, the longest wait in ms; default: until the approval expires. */
  approvalTimeout?: number | undefined;
  /** Send events of in-process evaluations to the server. Default true. */
  events?: boolean | undefined;
  /** Send when this many events wait. Default 100. */
  eventBatchSize?: number | undefined;
  /** Send at least this often. Default 5. */
  eventFlushIntervalSeconds?: number | undefined;
  /**
   * Post events from a worker thread of the agent's own (event-thread.ts), off the thread
   * that checks steps; for a process whose checks are on every request's path (the MCP
   * gateway). Not with a custom `fetch`, which a thread cannot call: events are then posted
   * in-thread. Default false.
   */
  eventThread?: boolean | undefined;
  /** Events kept while the server cannot take them; the oldest go first. Default 10000. */
  maxBufferedEvents?: number | undefined;
  /** Evaluators for `execution: sdk` controls; the built-ins by default. */
  registry?: EvaluatorRegistry | undefined;
  logger?: GuardLogger | undefined;
  fetch?: typeof fetch | undefined;
  /**
   * OpenTelemetry (docs/sdk.md, "Tracing"): the tracer of the `guardctl.evaluate` spans of
   * in-process evaluations. Default: the global tracer provider's, when `@opentelemetry/api`
   * is installed; `false` turns tracing (spans and propagation) off.
   */
  tracer?: TracerLike | false | undefined;
  /**
   * The session every check of this agent belongs to (docs/sessions.md), unless a call
   * names another (`CheckOptions.sessionId`, `ControlOptions.sessionId`). Default: none.
   */
  sessionId?: string | undefined;
}

/** Per-call options of `evaluate`, `verdict` and `check`. */
export interface CheckOptions {
  /** The step's session; overrides `GuardAgentOptions.sessionId`. */
  sessionId?: string | undefined;
}

export interface ControlOptions<A extends unknown[] = unknown[]> {
  /** The step name controls are scoped to; defaults to the function's name. */
  stepName?: string;
  type: StepType;
  /**
   * The step's input, picked out of the call's arguments. Default: the first argument,
   * so that what frameworks pass after it (a tool call id, the whole conversation) is
   * neither checked in its place nor sent to the server.
   */
  input?: (...args: A) => unknown;
  /** Context metadata for `context.<field>` selectors (a user id, a tenant, ...). */
  context?: JsonObject | (() => JsonObject);
  /** The session of each call (a function: read per call); overrides `GuardAgentOptions.sessionId`. */
  sessionId?: string | (() => string | undefined);
}

export const consoleLogger: GuardLogger = {
  info: (message) => console.info(`[guardctl] ${message}`),
  warn: (message) => console.warn(`[guardctl] ${message}`),
};
