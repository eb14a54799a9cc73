import { z } from 'zod';
import { AGENT_NAME_MAX, DecisionSchema, JsonObjectSchema, StageSchema, StepTypeSchema } from './common.js';
import { ControlModeSchema } from './control.js';
import { SessionIdSchema } from './session.js';

/** The most non-matches one event may stand for (`count`); a client's rollup past it is sent as more events. */
export const MAX_EVENT_COUNT = 1_000_000;

/**
 * The longest duration an event may claim (ms; over 30,000 years): a rollup of a million
 * non-matches of an hour each is well within it. Sums of such events stay far from a
 * double's range; a client's 1e308 made PostgreSQL's rollup upsert overflow, and each flush
 * holding it failed, losing every agent's non-matches in it.
 */
export const MAX_EVENT_DURATION_MS = 1e15;

/** One control evaluated against one step: the unit of observability. */
export const ObservabilityEventSchema = z.strictObject({
  control_execution_id: z.string().min(1).max(128),
  trace_id: z.string().min(1).max(128),
  span_id: z.string().min(1).max(128),
  agent_name: z.string().min(1).max(AGENT_NAME_MAX),
  control_id: z.number().int(),
  control_name: z.string().max(256),
  check_stage: StageSchema,
  applies_to: StepTypeSchema,
  action: DecisionSchema,
  matched: z.boolean(),
  confidence: z.number().min(0).max(1),
  /** ISO 8601 time. */
  timestamp: z.iso.datetime({ offset: true }),
  execution_duration_ms: z.number().min(0).max(MAX_EVENT_DURATION_MS),
  evaluator_name: z.string().max(128).nullable(),
  selector_path: z.string().max(512).nullable(),
  error_message: z.string().max(8192).nullable(),
  metadata: JsonObjectSchema.nullable(),
  /**
   * A non-match whose selector found nothing in the step (ControlMatch.selector_missing):
   * stored as a row rather than rolled up, and counted as `selector_missing` in stats.
   */
  selector_missing: z.boolean().optional(),
  /**
   * The control's mode when it ran: a `shadow` match did not take part in the decision.
   * Absent means `enforce` (clients that predate modes); stores always return it.
   */
  mode: ControlModeSchema.optional(),
  /**
   * The store revision of the agent's control set that was evaluated (the audit log's
   * revision numbers): the rules in force are the controls as of that revision. Null when
   * unknown; absent from events of clients that do not send it.
   */
  set_revision: z.number().int().nonnegative().nullable().optional(),
  /**
   * The session the step named (`session_id` of the evaluation request; docs/sessions.md).
   * Null when the step had none; absent from events of clients that do not send it.
   */
  session_id: SessionIdSchema.nullable().optional(),
  /**
   * How many non-matches this event stands for: a client's rollup of the non-matches of one
   * agent, stage, step, session and control in the minute of `timestamp`, whose
   * `execution_duration_ms` is their total. Only on a non-match (not matched, no error, no
   * selector_missing); absent means 1. Stored events never have it.
   */
  count: z.number().int().min(1).max(MAX_EVENT_COUNT).optional(),
});
export type ObservabilityEvent = z.infer<typeof ObservabilityEventSchema>;

/**
 * An event as the server stores it: a shadow match the server evaluated may carry an
 * example of the step (masked and redacted, see src/observability/shadow-examples.ts).
 * Not part of the API's event schema: clients cannot send one.
 */
export type StoredEvent = ObservabilityEvent & { example?: string | null };
