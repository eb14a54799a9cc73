/**
 * What both stores share about history and audit: the stored shapes, the queries, and the
 * pure rules (what a revision snapshot holds, what restoring a revision means). The
 * writes themselves happen inside each store's own transactions, next to the change
 * they describe, so a failed write leaves neither.
 */
import { isDeepStrictEqual } from 'node:util';
import type {
  AgentRecord,
  ChangeEntry,
  ChangeKind,
  ChangeOp,
  ControlRecord,
  ControlSnapshot,
} from '../model/index.js';

/** One entry to store; the store adds id, revision and time. */
export interface NewChangeEntry {
  kind: ChangeKind;
  op: ChangeOp;
  control_id: number | null;
  control_name: string | null;
  agent_name: string | null;
  before: object | null;
  after: object | null;
  note: string | null;
  /** Only on a policy's entries. */
  policy_id?: number;
}

export interface ChangePageQuery {
  /** Entries with an id below it (the previous page's `next_cursor`): pages go newest first. */
  cursor?: number | undefined;
  limit: number;
}

export interface AuditQuery extends ChangePageQuery {
  /** ISO time; only writes at or after it. */
  since?: string | undefined;
  actor?: string | undefined;
}

export interface ChangePage {
  entries: ChangeEntry[];
  next_cursor: number | null;
}

/** Why a restore did not happen; the route turns each into its status and message. */
export type RestoreRefusal =
  /** The control has no entry of that revision (404). */
  | { reason: 'no_revision' }
  /** The control is owned by apply or watch mode: its file is the truth (409). */
  | { reason: 'managed'; name: string; managed_by: string; source: string | null }
  /** The revision deleted the control: there is nothing to restore at it (409). */
  | { reason: 'deleted_at_revision'; name: string | null }
  /** A deleted control comes back under its name, which another control now holds (409). */
  | { reason: 'name_taken'; name: string };

export type RestoreOutcome =
  | { ok: true; control: ControlRecord; changed: boolean; recreated: boolean }
  | ({ ok: false } & RestoreRefusal);

export function controlSnapshot(record: Pick<ControlRecord, 'name' | 'enabled' | 'data' | 'managed_by' | 'source'>): ControlSnapshot {
  return {
    name: record.name,
    enabled: record.enabled,
    data: record.data,
    managed_by: record.managed_by,
    source: record.source,
  };
}

export function agentSnapshot(record: Pick<AgentRecord, 'agent_description' | 'agent_version' | 'steps' | 'metadata' | 'labels' | 'managed_by'>): object {
  return {
    agent_description: record.agent_description,
    agent_version: record.agent_version,
    steps: record.steps,
    metadata: record.metadata,
    labels: record.labels,
    managed_by: record.managed_by,
  };
}

export function controlEntry(op: ChangeOp, controlId: number, name: string, before: ControlSnapshot | null, after: ControlSnapshot | null, note: string | null = null): NewChangeEntry {
  return { kind: 'control', op, control_id: controlId, control_name: name, agent_name: null, before, after, note };
}

export function linkEntry(op: 'link' | 'unlink', agentName: string, controlId: number, controlName: string): NewChangeEntry {
  const linked = { linked: true };
  const unlinked = { linked: false };
  return {
    kind: 'link',
    op,
    control_id: controlId,
    control_name: controlName,
    agent_name: agentName,
    before: op === 'link' ? unlinked : linked,
    after: op === 'link' ? linked : unlinked,
    note: null,
  };
}

/** A policy written: its record (without times) before and after. */
export function policyEntry(op: 'create' | 'update' | 'delete', policyId: number, before: object | null, after: object | null, note: string | null = null): NewChangeEntry {
  return { kind: 'policy', op, control_id: null, control_name: null, agent_name: null, before, after, note, policy_id: policyId };
}

export function agentEntry(op: 'create' | 'update' | 'delete', agentName: string, before: object | null, after: object | null, note: string | null = null): NewChangeEntry {
  return { kind: 'agent', op, control_id: null, control_name: null, agent_name: agentName, before, after, note };
}

/** The note of an agent's delete: the controls it was unlinked from, by name. */
export function unlinkedNote(controls: ReadonlyArray<{ name: string }>): string | null {
  return controls.length > 0 ? `unlinked from ${controls.map((c) => c.name).join(', ')}` : null;
}

/** Whether two snapshots hold the same control (key order aside). */
export function sameSnapshot(a: ControlSnapshot, b: ControlSnapshot): boolean {
  return isDeepStrictEqual(a, b);
}

/** The entries of one control that say what the control itself looked like (not its links). */
const CONTROL_WRITES: ReadonlySet<ChangeOp> = new Set(['create', 'update', 'delete', 'restore']);

/**
 * What restoring `revision` would write, from the control's history (any order) and its
 * current record (null when deleted). PURE: the stores call it inside the transaction
 * that then writes the result.
 */
export function planRestore(
  history: readonly Pick<ChangeEntry, 'id' | 'revision' | 'kind' | 'op' | 'after' | 'before'>[],
  current: Pick<ControlRecord, 'name' | 'managed_by' | 'source'> | null,
  revision: number,
): { ok: true; target: ControlSnapshot } | ({ ok: false } & RestoreRefusal) {
  if (!history.some((e) => e.revision === revision)) return { ok: false, reason: 'no_revision' };
  if (current !== null && current.managed_by !== null) {
    return { ok: false, reason: 'managed', name: current.name, managed_by: current.managed_by, source: current.source };
  }
  // The control as it was right after that revision: the last control write at or before it.
  const writes = history
    .filter((e) => e.kind === 'control' && CONTROL_WRITES.has(e.op) && e.revision <= revision)
    .sort((a, b) => a.id - b.id);
  const last = writes.at(-1);
  const target = (last?.after ?? null) as ControlSnapshot | null;
  if (target === null) {
    const name = ((last?.before ?? null) as ControlSnapshot | null)?.name ?? null;
    return { ok: false, reason: 'deleted_at_revision', name };
  }
  // A deleted control that apply or watch mode owned comes back only through its file.
  if (current === null && target.managed_by !== null) {
    return { ok: false, reason: 'managed', name: target.name, managed_by: target.managed_by, source: target.source };
  }
  return { ok: true, target };
}

/** An entry from a change_log row; each dialect gives its time as ISO text or a Date, its JSON as text or parsed. */
export function entryOf(row: {
  id: number | string;
  revision: number | string;
  ts: string | Date;
  actor: string;
  source: string;
  kind: string;
  op: string;
  control_id: number | string | null;
  control_name: string | null;
  agent_name: string | null;
  before: unknown;
  after: unknown;
  note: string | null;
  policy_id?: number | string | null;
}): ChangeEntry {
  const json = (value: unknown): Record<string, unknown> | null =>
    value === null || value === undefined ? null : typeof value === 'string' ? (JSON.parse(value) as Record<string, unknown>) : (value as Record<string, unknown>);
  return {
    id: Number(row.id),
    revision: Number(row.revision),
    timestamp: row.ts instanceof Date ? row.ts.toISOString() : row.ts,
    actor: row.actor,
    source: row.source as ChangeEntry['source'],
    kind: row.kind as ChangeEntry['kind'],
    op: row.op as ChangeEntry['op'],
    control_id: row.control_id === null ? null : Number(row.control_id),
    control_name: row.control_name,
    agent_name: row.agent_name,
    before: json(row.before),
    after: json(row.after),
    note: row.note,
    ...(row.policy_id !== null && row.policy_id !== undefined ? { policy_id: Number(row.policy_id) } : {}),
  };
}


/**
 * History and audit, read side: every write to a control, an agent or a link, stored by
 * the ControlStore's writes in the same transaction as the write.
 */
export interface HistoryStore {
  /** A policy's entries, newest first; kept after it is deleted. */
  policyHistory(policyId: number, page: ChangePageQuery): Promise<ChangePage>;
  /** A control's entries (its own writes and its links), newest first; kept after it is deleted. */
  controlHistory(controlId: number, page: ChangePageQuery): Promise<ChangePage>;
  /** Every entry, newest first. */
  auditLog(query: AuditQuery): Promise<ChangePage>;
  /**
   * Deletes the entries older than `before` (ISO time) and those beyond the newest
   * `maxEntries`; returns how many. A restore can go back only as far as history is kept.
   */
  pruneHistory(limits: HistoryLimits): Promise<number>;
}

export interface HistoryLimits {
  maxEntries: number;
  before: string;
}
