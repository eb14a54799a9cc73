import { z } from 'zod';
import { JsonObjectSchema } from './common.js';

/** Where a write came from: the REST API by hand, GitOps apply (`POST /changes`), or watch mode. */
export const WriteSourceSchema = z.enum(['api', 'apply', 'watch']);
export type WriteSource = z.infer<typeof WriteSourceSchema>;

/**
 * Who made a write and through what. The actor names a key by its class and a short
 * fingerprint (`admin:3f9a1c2b`, never the key), `anonymous` when authentication is off,
 * `watch:<dir>` for watch mode, `system` for the server's own writes.
 */
export interface WriteOrigin {
  actor: string;
  source: WriteSource;
}

/** The origin of writes made by the process itself (tests, tools that open a store directly). */
export const SYSTEM_ORIGIN: WriteOrigin = Object.freeze({ actor: 'system', source: 'api' });

/** `approval`: an approval asked, decided, used or expired (audit only: it changes no control). */
export const ChangeKindSchema = z.enum(['control', 'agent', 'link', 'policy', 'approval', 'mcp_server']);
export type ChangeKind = z.infer<typeof ChangeKindSchema>;

export const ChangeOpSchema = z.enum(['create', 'update', 'delete', 'restore', 'link', 'unlink', 'ask', 'approve', 'deny', 'use', 'expire']);
export type ChangeOp = z.infer<typeof ChangeOpSchema>;

/**
 * One stored write: a revision of a control (its record before and after), of an agent,
 * or a link made or removed. Kept when the control is deleted, never pruned.
 */
export const ChangeEntrySchema = z.strictObject({
  /** Unique and increasing; the cursor of history and audit pages. */
  id: z.number().int().positive(),
  /**
   * The store revision the write produced: the number `restore` takes and the one
   * evaluation events name as `set_revision`. A transaction that wrote several things
   * gives them the same revision on PostgreSQL (one per transaction) and one each on SQLite.
   */
  revision: z.number().int().nonnegative(),
  timestamp: z.string(),
  actor: z.string(),
  source: WriteSourceSchema,
  kind: ChangeKindSchema,
  op: ChangeOpSchema,
  control_id: z.number().int().nullable(),
  control_name: z.string().nullable(),
  agent_name: z.string().nullable(),
  /** Set on a policy's entries (kind `policy`); their snapshots hold its name. */
  policy_id: z.number().int().positive().optional(),
  /** The control record (name, enabled, data, managed_by, source), the agent's fields, or `{linked}`; null when absent. */
  before: JsonObjectSchema.nullable(),
  after: JsonObjectSchema.nullable(),
  /** For example `restored revision 12`, or the agents a deleted control was unlinked from. */
  note: z.string().nullable(),
});
export type ChangeEntry = z.infer<typeof ChangeEntrySchema>;

/** The part of a control record a control revision keeps. */
export interface ControlSnapshot {
  name: string;
  enabled: boolean;
  data: Record<string, unknown> | null;
  managed_by: string | null;
  source: string | null;
}
