/**
 * PURE: approvals (docs/approvals.md). A control whose action is `ask` makes the server ask
 * a person before the exact step runs; the approval is bound to a digest of the step
 * (agent, stage, step type, name, canonical input), so a different input is a new question.
 */
import { z } from 'zod';
import { StageSchema, StepTypeSchema } from './common.js';

/** How long an approval waits for a person when the control does not say. */
export const DEFAULT_APPROVAL_TIMEOUT = '15m';
/** Bounds of `action.approval.timeout`: a person needs some time, and a question must not live for ever. */
export const MIN_APPROVAL_TIMEOUT_MS = 10_000;
export const MAX_APPROVAL_TIMEOUT_MS = 7 * 86_400_000;
/** Longest reason an approver may give. */
export const MAX_APPROVAL_REASON = 1000;

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `30s`, `15m`, `2h`, `1d` -> milliseconds, or a message saying what is wrong (the rate windows' syntax). */
export function parseApprovalTimeout(text: string): number | string {
  const m = /^([1-9][0-9]{0,6})(s|m|h|d)$/.exec(text);
  if (!m) return `timeout "${text}" is not a duration: a whole number and a unit s, m, h or d (30s, 15m, 2h, 1d)`;
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  if (ms < MIN_APPROVAL_TIMEOUT_MS) return `timeout "${text}" is shorter than 10s: a person needs time to answer`;
  if (ms > MAX_APPROVAL_TIMEOUT_MS) return `timeout "${text}" is longer than 7d, the longest an approval may wait`;
  return ms;
}

export const ApprovalSettingsSchema = z.strictObject({
  timeout: z
    .string()
    .describe('How long the approval waits for a person before it expires and the step is denied: 30s, 15m, 2h, 1d (default 15m, at most 7d)')
    .superRefine((text, ctx) => {
      const parsed = parseApprovalTimeout(text);
      if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
    })
    .optional(),
});
export type ApprovalSettings = z.infer<typeof ApprovalSettingsSchema>;

/** The timeout of an ask control's approvals, in ms. */
export function approvalTimeoutMs(settings: ApprovalSettings | undefined): number {
  const parsed = parseApprovalTimeout(settings?.timeout ?? DEFAULT_APPROVAL_TIMEOUT);
  return typeof parsed === 'number' ? parsed : 15 * 60_000;
}

export const ApprovalStatusSchema = z.enum(['pending', 'approved', 'denied', 'expired']);
export type ApprovalStatus = z.infer<typeof ApprovalStatusSchema>;

/** What an evaluation answer says of the approval its step needs or used. */
export const ApprovalRefSchema = z.strictObject({
  id: z.string(),
  status: ApprovalStatusSchema,
  expires_at: z.string(),
  /** Who approved or denied, and why: set once decided. */
  decided_by: z.string().nullable().optional(),
  reason: z.string().nullable().optional(),
});
export type ApprovalRef = z.infer<typeof ApprovalRefSchema>;

/** An approval as `GET /api/v1/approvals/{id}` answers it. */
export const ApprovalRecordSchema = z.strictObject({
  id: z.string(),
  status: ApprovalStatusSchema,
  agent_name: z.string(),
  stage: StageSchema,
  step_type: StepTypeSchema,
  step_name: z.string(),
  control_id: z.number().int(),
  control_name: z.string(),
  /** The step as the agent sent it, masked as recorded steps are (secrets, card numbers). */
  step: z.unknown(),
  created_at: z.string(),
  expires_at: z.string(),
  decided_at: z.string().nullable(),
  decided_by: z.string().nullable(),
  reason: z.string().nullable(),
  /** When the approved step ran (its one allowed submission); null until then. */
  used_at: z.string().nullable(),
});
export type ApprovalRecord = z.infer<typeof ApprovalRecordSchema>;

/**
 * Control characters other than newline and tab: a reason is printed by `guardctl approvals`,
 * the dashboard and the agent's error, where an escape sequence would rewrite the terminal.
 */
// eslint-disable-next-line no-control-regex -- control characters are what it finds
export const REASON_CONTROL_CHARACTERS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

export const ApprovalDecisionBodySchema = z.strictObject({
  reason: z
    .string()
    .max(MAX_APPROVAL_REASON, `reason must be at most ${MAX_APPROVAL_REASON} characters`)
    .refine((text) => !REASON_CONTROL_CHARACTERS.test(text), 'reason must not hold control characters other than newline and tab')
    .optional(),
});
export type ApprovalDecisionBody = z.infer<typeof ApprovalDecisionBodySchema>;
