/**
 * PURE. Sessions (docs/sessions.md): steps of one agent that carry the same `session_id`
 * share labels that controls add (`action.session_labels`) and require or exclude
 * (`scope.session_labels`, `scope.session_labels_absent`).
 */
import { z } from 'zod';

/** The same text rules as names: 1-128 characters, printable, no NUL or control character, not a dot segment. */
export const SESSION_ID_MAX = 128;

export const SessionIdSchema = z
  .string()
  .min(1, 'session_id must not be empty')
  .max(SESSION_ID_MAX, `session_id must be at most ${SESSION_ID_MAX} characters`)
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'session_id must not hold NUL or other control characters')
  // PostgreSQL's text would turn a lone surrogate into U+FFFD, merging distinct ids.
  .refine((id) => id.isWellFormed(), 'session_id must be well-formed Unicode (no lone surrogate)')
  // A URL resolves the path segments "." and ".." away (even percent-encoded), so
  // GET /sessions/{id} could never read such a session back.
  .refine((id) => !isDotSegment(id), 'session_id must not be "." or "..", which a URL path cannot carry');

function isDotSegment(id: string): boolean {
  return id === '.' || id === '..';
}

/** The rule of SessionIdSchema without zod (the evaluation fast path). */
export function isValidSessionId(id: unknown): id is string {
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  return typeof id === 'string' && id.length >= 1 && id.length <= SESSION_ID_MAX && !/[\u0000-\u001f\u007f]/.test(id) && id.isWellFormed() && !isDotSegment(id);
}

export const SessionLabelSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.:-]{0,63}$/, 'a session label is 1-64 characters: lowercase letters, digits and _ . : -, starting with a letter or digit');

/** Labels a control adds, requires or excludes: a short list without repeats. */
export const SessionLabelListSchema = z
  .array(SessionLabelSchema)
  .min(1, 'a session label list must not be empty; leave it out instead')
  .max(32, 'at most 32 session labels')
  .refine((labels) => new Set(labels).size === labels.length, 'session labels must not repeat');

/** The session a step belongs to, as the evaluation result gives it. */
export const SessionResultSchema = z.strictObject({
  id: z.string(),
  /** The session's labels once this step's matches have added theirs, sorted. */
  labels: z.array(z.string()),
});
export type SessionResult = z.infer<typeof SessionResultSchema>;

/** Who added a label: the control and the step. */
export const SessionLabelOriginSchema = z.strictObject({
  label: z.string(),
  control_id: z.number().int(),
  control_name: z.string(),
  stage: z.enum(['pre', 'post']),
  step_name: z.string(),
  added_at: z.string(),
});
export type SessionLabelOrigin = z.infer<typeof SessionLabelOriginSchema>;

/** `GET /api/v1/sessions/{id}?agent_name=`. */
export const SessionInfoSchema = z.strictObject({
  agent_name: z.string(),
  session_id: z.string(),
  labels: z.array(SessionLabelOriginSchema),
  steps: z.number().int(),
  first_seen: z.string(),
  last_seen: z.string(),
  expires_at: z.string(),
});
export type SessionInfo = z.infer<typeof SessionInfoSchema>;
