/**
 * Helpers both stores share: how a record's `enabled` column and its data meet, how rows
 * become records, how an event's outcome is classified and how stats rows are assembled.
 * Pure: no database here.
 */
import { storableJsonText, storableText, type AgentRecord, type ControlData, type ControlMode, type ControlRecord, type ObservabilityEvent, type StoredEvent } from '../model/index.js';
import { epochMsOfIso } from '../model/iso-time.js';
import type { ControlStatsRow, EventRollup } from './types.js';

/**
 * The stored form of control data: without `enabled`, which lives only in the record's
 * column, so that the two views can never disagree.
 */
export function storedDataOf(data: ControlData | null | undefined): string | null {
  if (data === null || data === undefined) return null;
  const { enabled: _enabled, ...rest } = data;
  return JSON.stringify(rest);
}

/** Puts the record's `enabled` column back into the data it returns. */
export function dataWithEnabled(stored: unknown, enabled: boolean): ControlData | null {
  if (stored === null || stored === undefined) return null;
  if (typeof stored !== 'string') return { ...(stored as Omit<ControlData, 'enabled'>), enabled };
  // Text parses to an object nobody else holds, so `enabled` is added in place. A spread
  // copy here measurably kept garbage alive: V8 promoted about a tenth of what a server
  // reading 10,000 controls allocated to the old generation, where it stays until a full GC.
  const parsed = JSON.parse(stored) as ControlData;
  parsed.enabled = enabled;
  return parsed;
}

/** The columns of a control that both dialects return as they are. */
type ControlColumns = Pick<ControlRecord, 'name' | 'managed_by' | 'source'>;
/** The columns each dialect converts its own way (ids, booleans, times, JSON). */
type ControlConverted = Pick<ControlRecord, 'control_id' | 'enabled' | 'created_at' | 'updated_at'> & { data: unknown };

/** A control record from a row: the shared columns as they are, the converted ones given. */
export function controlRecordOf(row: ControlColumns, own: ControlConverted): ControlRecord {
  return {
    control_id: own.control_id,
    name: row.name,
    enabled: own.enabled,
    data: dataWithEnabled(own.data, own.enabled),
    managed_by: row.managed_by,
    source: row.source,
    created_at: own.created_at,
    updated_at: own.updated_at,
  };
}

type AgentColumns = Pick<AgentRecord, 'agent_name' | 'agent_description' | 'agent_version' | 'managed_by'>;
type AgentConverted = Pick<AgentRecord, 'steps' | 'metadata' | 'labels' | 'created_at' | 'updated_at'>;

export function agentRecordOf(row: AgentColumns, own: AgentConverted): AgentRecord {
  return {
    agent_name: row.agent_name,
    agent_description: row.agent_description,
    agent_version: row.agent_version,
    steps: own.steps,
    metadata: own.metadata,
    labels: own.labels,
    managed_by: row.managed_by,
    created_at: own.created_at,
    updated_at: own.updated_at,
  };
}

type EventConverted = Pick<ObservabilityEvent, 'control_id' | 'matched' | 'timestamp' | 'metadata'> & { set_revision: number | null };
type EventColumns = Omit<ObservabilityEvent, keyof EventConverted | 'check_stage' | 'applies_to' | 'action' | 'mode' | 'selector_missing' | 'session_id'> & {
  session_id: string | null;
  check_stage: string;
  applies_to: string;
  action: string;
  outcome: number;
  mode: string;
  example: string | null;
};

/** An event from a row; the stage, step type, action and mode columns hold what was stored from an event. */
export function eventRecordOf(row: EventColumns, own: EventConverted): StoredEvent {
  return {
    control_execution_id: row.control_execution_id,
    trace_id: row.trace_id,
    span_id: row.span_id,
    agent_name: row.agent_name,
    control_id: own.control_id,
    control_name: row.control_name,
    check_stage: row.check_stage as ObservabilityEvent['check_stage'],
    applies_to: row.applies_to as ObservabilityEvent['applies_to'],
    action: row.action as ObservabilityEvent['action'],
    matched: own.matched,
    confidence: row.confidence,
    timestamp: own.timestamp,
    execution_duration_ms: row.execution_duration_ms,
    evaluator_name: row.evaluator_name,
    selector_path: row.selector_path,
    error_message: row.error_message,
    metadata: own.metadata,
    ...selectorMissingOf(row.outcome),
    mode: row.mode as ControlMode,
    set_revision: own.set_revision,
    session_id: row.session_id,
    example: row.example,
  };
}

/** The columns of an event row, in the order both dialects insert them. */
export const EVENT_COLUMNS = `control_execution_id, trace_id, span_id, agent_name, control_id, control_name,
  check_stage, applies_to, action, matched, outcome, confidence, ts, execution_duration_ms,
  evaluator_name, selector_path, error_message, metadata, mode, set_revision, example, session_id`;

/** How many columns EVENT_COLUMNS names. */
export const EVENT_COLUMNS_COUNT = EVENT_COLUMNS.split(',').length;

/**
 * An event's values in EVENT_COLUMNS order; each dialect gives `matched` and the time in
 * its own types. Text reaches both stores storable (model/text.ts): events come from
 * agents' steps and clients, and one NUL must neither fail PostgreSQL's batch nor be kept
 * by SQLite alone.
 */
export function eventValuesOf(e: StoredEvent, matched: unknown, ts: unknown): unknown[] {
  const values = new Array<unknown>(EVENT_COLUMNS_COUNT);
  writeEventValues(values, 0, e, matched, ts);
  return values;
}

/**
 * Writes the EVENT_COLUMNS_COUNT values of `e` (see eventValuesOf) into `values` from
 * `offset`: the rows of a statement of several rows fill one array made to size.
 */
export function writeEventValues(values: unknown[], offset: number, e: StoredEvent, matched: unknown, ts: unknown): void {
  let i = offset;
  values[i++] = storableText(e.control_execution_id);
  values[i++] = storableText(e.trace_id);
  values[i++] = storableText(e.span_id);
  values[i++] = storableText(e.agent_name);
  values[i++] = e.control_id;
  values[i++] = storableText(e.control_name);
  values[i++] = e.check_stage;
  values[i++] = e.applies_to;
  values[i++] = e.action;
  values[i++] = matched;
  values[i++] = outcomeOf(e);
  values[i++] = e.confidence;
  values[i++] = ts;
  values[i++] = e.execution_duration_ms;
  values[i++] = nullableText(e.evaluator_name);
  values[i++] = nullableText(e.selector_path);
  values[i++] = nullableText(e.error_message);
  values[i++] = e.metadata === null ? null : storableJsonText(JSON.stringify(e.metadata));
  values[i++] = e.mode ?? 'enforce';
  values[i++] = e.set_revision ?? null;
  values[i++] = e.example === undefined || e.example === null ? null : storableJsonText(e.example);
  values[i] = e.session_id === undefined || e.session_id === null ? null : storableText(e.session_id);
}

function nullableText(text: string | null): string | null {
  return text === null ? null : storableText(text);
}

/**
 * The `enabled` a control write leaves in the column: an explicit `enabled` wins, then
 * the data's own `enabled`, then what the record had.
 */
export function enabledAfter(
  current: boolean,
  patch: { enabled?: boolean | undefined; data?: ControlData | null | undefined },
): boolean {
  if (patch.enabled !== undefined) return patch.enabled;
  if (patch.data) return patch.data.enabled;
  return current;
}

/**
 * How an event counts in stats. An error is neither a match nor a non-match, so
 * executions = matches + non_matches + errors holds by construction. A non-match whose
 * selector found nothing is stored as a row of its own outcome, counted both as a
 * non-match and as `selector_missing`. A shadow control's outcome is the same plus
 * SHADOW_OUTCOME, so the stats indexes (which end in outcome and action) count
 * would-deny and would-steer without another index.
 */
export const OUTCOME_NON_MATCH = 0;
export const OUTCOME_MATCH = 1;
export const OUTCOME_ERROR = 2;
export const OUTCOME_SELECTOR_MISSING = 3;
/** Added to a shadow control's outcome (so 4 to 7 are the shadow outcomes). */
export const SHADOW_OUTCOME = 4;
/** The outcomes stats read from event rows (non-matches come from the rollups), both modes. */
export const ROW_OUTCOMES: readonly number[] = [OUTCOME_MATCH, OUTCOME_ERROR, OUTCOME_SELECTOR_MISSING].flatMap((o) => [o, o + SHADOW_OUTCOME]);

export function outcomeOf(event: Pick<ObservabilityEvent, 'matched' | 'error_message' | 'selector_missing' | 'mode'>): number {
  const base =
    event.error_message !== null
      ? OUTCOME_ERROR
      : event.matched
        ? OUTCOME_MATCH
        : event.selector_missing === true
          ? OUTCOME_SELECTOR_MISSING
          : OUTCOME_NON_MATCH;
  return event.mode === 'shadow' ? base + SHADOW_OUTCOME : base;
}

/** The event's selector_missing field as a stored row's outcome gives it back (either mode). */
export function selectorMissingOf(outcome: number): { selector_missing?: true } {
  return outcome % SHADOW_OUTCOME === OUTCOME_SELECTOR_MISSING ? { selector_missing: true } : {};
}

/** The outcome of a rollup's non-matches in `mode` (rollups hold non-matches only). */
export function rollupOutcomeOf(mode: string): number {
  return mode === 'shadow' ? SHADOW_OUTCOME + OUTCOME_NON_MATCH : OUTCOME_NON_MATCH;
}

/** One aggregate from a store: how many events of one control had one outcome and action. */
export interface StatsPart {
  control_id: number;
  outcome: number;
  action: string;
  count: number;
  duration_sum: number;
}

/** The stats row of a control that did nothing in the window. */
export function emptyStatsRow(control_id: number, control_name: string): ControlStatsRow {
  return {
    control_id,
    control_name,
    executions: 0,
    matches: 0,
    non_matches: 0,
    errors: 0,
    selector_missing: 0,
    actions: {},
    avg_duration_ms: 0,
    shadow_executions: 0,
    shadow_matches: 0,
    shadow_errors: 0,
    would_deny: 0,
    would_steer: 0,
  };
}

/** Folds (control, outcome, action) aggregates into one row per control, ordered by id. */
export function statsRowsOf(parts: StatsPart[], nameOf: (controlId: number) => string): ControlStatsRow[] {
  const rows = new Map<number, ControlStatsRow & { duration_sum: number }>();
  for (const part of parts) {
    if (part.count === 0) continue;
    let row = rows.get(part.control_id);
    if (!row) {
      row = { ...emptyStatsRow(part.control_id, ''), duration_sum: 0 };
      rows.set(part.control_id, row);
    }
    const shadow = part.outcome >= SHADOW_OUTCOME;
    const outcome = shadow ? part.outcome - SHADOW_OUTCOME : part.outcome;
    row.executions += part.count;
    row.duration_sum += part.duration_sum;
    if (shadow) row.shadow_executions += part.count;
    if (outcome === OUTCOME_ERROR) {
      row.errors += part.count;
      if (shadow) row.shadow_errors += part.count;
    } else if (outcome === OUTCOME_MATCH) {
      row.matches += part.count;
      row.actions[part.action] = (row.actions[part.action] ?? 0) + part.count;
      if (shadow) {
        row.shadow_matches += part.count;
        if (part.action === 'deny') row.would_deny += part.count;
        else if (part.action === 'steer') row.would_steer += part.count;
      }
    } else {
      row.non_matches += part.count;
      if (outcome === OUTCOME_SELECTOR_MISSING) row.selector_missing += part.count;
    }
  }
  return [...rows.values()]
    .sort((a, b) => a.control_id - b.control_id)
    .map(({ duration_sum, ...row }) => ({
      ...row,
      control_name: nameOf(row.control_id),
      avg_duration_ms: row.executions > 0 ? duration_sum / row.executions : 0,
    }));
}

/** A recorded_steps row; each driver returns the id, the time and the step in its own types. */
export interface RecordedStepColumns<Id, Time, Step> {
  id: Id;
  ts: Time;
  agent_name: string;
  stage: 'pre' | 'post';
  step: Step;
  decision: string;
  session_id: string | null;
}

export const MINUTE_MS = 60_000;

/** A rollup ready to store: its minute as epoch ms, the evaluator as '' when unknown, its mode always set. */
export interface StoredRollup extends Omit<EventRollup, 'bucket' | 'evaluator_name' | 'mode'> {
  bucket_ms: number;
  evaluator_name: string;
  mode: ControlMode;
}

/**
 * Floors each bucket to its minute and merges rollups with equal keys, so one upsert
 * statement never meets the same key twice (PostgreSQL refuses that).
 */
export function mergedRollups(rollups: readonly EventRollup[]): StoredRollup[] {
  const byKey = new Map<string, StoredRollup>();
  for (const r of rollups) {
    const bucket_ms = Math.floor(epochMsOf(r.bucket, 'bucket') / MINUTE_MS) * MINUTE_MS;
    const evaluator_name = storableText(r.evaluator_name ?? '');
    const mode = r.mode ?? 'enforce';
    const key = JSON.stringify([bucket_ms, r.agent_name, r.control_id, r.control_name, r.check_stage, r.applies_to, evaluator_name, mode]);
    const found = byKey.get(key);
    if (found) {
      found.count += r.count;
      found.total_duration_ms += r.total_duration_ms;
    } else {
      byKey.set(key, {
        bucket_ms,
        agent_name: storableText(r.agent_name),
        control_id: r.control_id,
        control_name: storableText(r.control_name),
        check_stage: r.check_stage,
        applies_to: r.applies_to,
        evaluator_name,
        mode,
        count: r.count,
        total_duration_ms: r.total_duration_ms,
      });
    }
  }
  return [...byKey.values()];
}

/** Parses an ISO time given to a query; a bad time is the caller's bug, said plainly. */
export function epochMsOf(iso: string, field: string): number {
  const ms = epochMsOfIso(iso);
  if (Number.isNaN(ms)) throw new TypeError(`${field} is not an ISO time: ${iso}`);
  return ms;
}

/** An ISO time given to a query or a write, in the one form PostgreSQL is sent. */
export function isoOf(iso: string, field: string): string {
  return new Date(epochMsOf(iso, field)).toISOString();
}

export function nowIso(): string {
  return new Date().toISOString();
}

/** Sorted, without duplicates: the stable form of a touched-agents list. */
export function uniqueSorted(names: Iterable<string>): string[] {
  return [...new Set(names)].sort();
}
