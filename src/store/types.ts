import type { ApprovalStore } from './approval-store.js';
import type {
  AgentPatch,
  AgentRecord,
  CounterRow,
  ControlMode,
  ControlPatch,
  ControlRecord,
  NewAgent,
  NewControl,
  StoreChange,
  StoredEvent,
  WriteOrigin,
} from '../model/index.js';
import type { HistoryStore, RestoreOutcome } from './history.js';

export type { ControlPatch, NewAgent, NewControl, StoreChange } from '../model/index.js';
export type { ApprovalDecision, ApprovalOutcome, ApprovalQuery, ApprovalRequest, ApprovalStore, DecideOutcome } from './approval-store.js';

export interface ControlPage {
  controls: ControlRecord[];
  next_cursor: number | null;
  has_more: boolean;
  total: number;
}

export interface Link {
  agent_name: string;
  control_id: number;
}

export interface EventQuery {
  agent_name?: string;
  control_ids?: number[];
  actions?: string[];
  matched?: boolean;
  stages?: string[];
  trace_id?: string;
  /** Only events of controls in this mode. */
  mode?: ControlMode;
  /** Only events that carry a shadow-report example. */
  with_example?: boolean;
  /** ISO times, inclusive start, exclusive end. */
  start_time?: string;
  end_time?: string;
  limit: number;
  offset: number;
}

export interface EventPage {
  /** As stored: `mode` and `set_revision` always set, `example` on the shadow matches that kept one. */
  events: StoredEvent[];
  total: number;
}

export interface ControlStatsRow {
  control_id: number;
  control_name: string;
  executions: number;
  matches: number;
  non_matches: number;
  errors: number;
  /** Non-matches whose selector found nothing in the step (included in non_matches). */
  selector_missing: number;
  /** Matches by action. */
  actions: Record<string, number>;
  avg_duration_ms: number;
  /**
   * Of the counts above, what the control did in shadow mode: evaluations, matches and
   * errors, and the matches by what they would have done (deny, steer). A control that
   * went from shadow to enforce within the window has both.
   */
  shadow_executions: number;
  shadow_matches: number;
  shadow_errors: number;
  would_deny: number;
  would_steer: number;
}

/**
 * Non-matches of one minute, rolled up: how many evaluations of one control, for one
 * agent, stage, step type and evaluator, did not match (and did not fail), and how long
 * they took together. Stats count non-matches only from these rows.
 */
export interface EventRollup {
  /** ISO time; stores keep the start of its minute. */
  bucket: string;
  agent_name: string;
  control_id: number;
  control_name: string;
  check_stage: string;
  applies_to: string;
  evaluator_name: string | null;
  /** The control's mode; absent means `enforce`. Shadow non-matches are counted apart. */
  mode?: ControlMode | undefined;
  count: number;
  total_duration_ms: number;
}

export interface StatsQuery {
  agent_name?: string;
  control_id?: number;
  /**
   * ISO time; only events at or after it count. Matches and errors count from the event
   * rows, non-matches from the rollups whose minute starts at or after it.
   */
  since: string;
}

/** One recorded step to store (see src/recording): the step is already redacted and serialised. */
export interface NewRecordedStep {
  /** ISO time of the evaluation. */
  timestamp: string;
  agent_name: string;
  stage: 'pre' | 'post';
  /** The step as JSON text (redacted, within the size cap). */
  step_json: string;
  decision: 'allow' | 'deny' | 'steer' | 'ask';
}

export interface RecordedStepRow {
  id: number;
  timestamp: string;
  agent_name: string;
  stage: 'pre' | 'post';
  /** The parsed step as recorded; replay re-validates it against today's model. */
  step: unknown;
  decision: string;
}

export interface RecordedStepQuery {
  agent_name?: string;
  /** ISO time; only steps recorded at or after it. */
  since?: string;
  limit: number;
  /** The last id of the previous page (pages go oldest first). */
  cursor?: number;
}

export interface RecordedStepPage {
  steps: RecordedStepRow[];
  next_cursor: number | null;
}

/** What a change notification says: the agents whose controls changed, or null for "any". */
export interface ChangeInfo {
  agents: string[] | null;
  /**
   * The store revision the change produced, when the notification says (PostgreSQL's do).
   * Replicas compare it with the revisions they read, so that a late notification is
   * never mistaken for one that was lost.
   */
  revision?: number;
}

/** Which change of a batch failed, and why (the store's message without the change named). */
export interface FailedChange {
  /** 0-based position of the change in the batch. */
  index: number;
  reason: string;
}

export interface ApplyChangesOptions {
  expectedRevision?: number | undefined;
}

export interface AppliedBatch {
  touched_agents: string[];
  /** The store revision once the batch committed. */
  revision: number;
}

/** The StoreError of a batch whose expected revision is not the store's. */
export function staleRevision(expected: number, actual: number): StoreError {
  return new StoreError(
    'stale',
    `the server changed since this plan was made: it is at revision ${actual}, the plan was made at revision ${expected}`,
  );
}

/** Raised by stores; the server maps each kind to its HTTP status. */
export class StoreError extends Error {
  constructor(
    /** `stale`: the store's revision is not the one an `applyChanges` batch expected. */
    readonly kind: 'conflict' | 'not_found' | 'unavailable' | 'stale',
    message: string,
    /** Set when a change of an `applyChanges` batch failed: the batch was rolled back. */
    readonly failedChange?: FailedChange,
  ) {
    super(message);
    this.name = 'StoreError';
  }
}

/**
 * Controls, agents and the links between them: what evaluation reads and GitOps, hot
 * reload and the API write. Every method that changes several rows does so in one
 * transaction. Unique name conflicts raise StoreError('conflict'); writes to unknown ids
 * or agents raise StoreError('not_found'). Every write also stores its history entry
 * (history.ts) in the same transaction, stamped with `origin` (SYSTEM_ORIGIN when absent).
 */
export interface ControlStore {
  createControl(control: NewControl, origin?: WriteOrigin): Promise<ControlRecord>;
  getControl(id: number): Promise<ControlRecord | null>;
  getControlByName(name: string): Promise<ControlRecord | null>;
  /** Ordered by control_id; `cursor` is the last id of the previous page. */
  listControls(page: { cursor?: number | undefined; limit: number }): Promise<ControlPage>;
  listAllControls(): Promise<ControlRecord[]>;
  updateControl(id: number, patch: ControlPatch, origin?: WriteOrigin): Promise<ControlRecord>;
  /** Deletes the control and its links; returns the agents it was linked to. */
  deleteControl(id: number, origin?: WriteOrigin): Promise<{ unlinked_agents: string[] }>;

  getAgent(name: string): Promise<AgentRecord | null>;
  listAgents(): Promise<AgentRecord[]>;
  /** Inserts or replaces the agent; returns the stored record and whether it existed. */
  upsertAgent(agent: NewAgent, origin?: WriteOrigin): Promise<{ agent: AgentRecord; created: boolean }>;
  patchAgent(name: string, patch: AgentPatch, origin?: WriteOrigin): Promise<AgentRecord>;
  /**
   * Removes an agent and its links (the controls stay); its history, events and recorded
   * steps are kept. Returns the ids of the controls it was linked to; not_found when unknown.
   */
  deleteAgent(name: string, origin?: WriteOrigin): Promise<{ unlinked_controls: number[] }>;

  /** Idempotent: true when a new link was made. */
  linkControl(agentName: string, controlId: number, origin?: WriteOrigin): Promise<boolean>;
  /** Idempotent: true when a link was removed. */
  unlinkControl(agentName: string, controlId: number, origin?: WriteOrigin): Promise<boolean>;
  listAgentControls(agentName: string): Promise<ControlRecord[]>;
  agentsOfControl(controlId: number): Promise<string[]>;
  listLinks(): Promise<Link[]>;

  /**
   * Applies every change in one transaction: all of them or none. Returns the agents
   * touched and the revision after the batch. A refused change raises a StoreError whose
   * `failedChange` names it. With `expectedRevision`, the batch runs only when the store
   * is still at that revision, checked inside its transaction (StoreError 'stale'
   * otherwise): optimistic concurrency for a GitOps apply made against that state.
   */
  applyChanges(changes: StoreChange[], origin?: WriteOrigin, options?: ApplyChangesOptions): Promise<AppliedBatch>;

  /**
   * A number that grows with every write to controls, agents or links. Replicas compare it
   * to notice writes they were not told about.
   */
  revision(): Promise<number>;

  /**
   * An agent's controls and the store revision they were read at, from one snapshot (the
   * revision evaluation events name as `set_revision`); null when the agent does not exist.
   */
  agentControlSet(agentName: string): Promise<{ controls: ControlRecord[]; revision: number } | null>;

  /**
   * Puts a hand-managed control back as it was right after `revision`, recreating it
   * under its id when it was deleted; one transaction, with its own history entry.
   */
  restoreControl(controlId: number, revision: number, origin: WriteOrigin): Promise<RestoreOutcome>;
}

/** Observability's rows: per-control events, per-minute non-match rollups and the stats read from both. */
export interface EventStore {
  /** Stores event rows as given (matches, errors and sampled non-matches). */
  insertEvents(events: StoredEvent[]): Promise<void>;
  /** Adds rollups to the stored ones: a row of the same minute and key grows by count and duration. */
  insertRollups(rollups: EventRollup[]): Promise<void>;
  queryEvents(query: EventQuery): Promise<EventPage>;
  /** Matches and errors from event rows, non-matches from rollups only (so none counts twice). */
  controlStats(query: StatsQuery): Promise<ControlStatsRow[]>;
  /** Deletes events and rollups older than `before` (ISO time); returns how many rows. */
  pruneEvents(before: string): Promise<number>;
}

/** Evaluated steps recorded for replay (src/recording, src/replay). */
export interface RecordingStore {
  /** Stores a batch of recorded steps in one transaction. */
  insertRecordedSteps(steps: NewRecordedStep[]): Promise<void>;
  /** Oldest first, by id; `next_cursor` is null on the last page. */
  queryRecordedSteps(query: RecordedStepQuery): Promise<RecordedStepPage>;
  /** Deletes recorded steps older than `before` (ISO time); returns how many. */
  pruneRecordedSteps(before: string): Promise<number>;
}

/** One key's counter of a rate or budget control (see evaluators/counting/). */
export type StoredCounter = CounterRow;

/** One counted step as a shared store takes it (the fields of CountRequest, plus the time). */
export interface SharedCountRequest {
  counter: string;
  control_id: number;
  key: string;
  kind: 'rate' | 'budget';
  window_ms: number;
  amount: number;
  max: number;
  always: boolean;
}

/** The SQLite file's counters: long windows written through, read back when the server starts. */
export interface CounterRowStore {
  loadCounters(now: number): StoredCounter[];
  saveCounter(row: StoredCounter): void;
  deleteExpiredCounters(now: number): void;
}

/**
 * What a step carries for its replica's lease of a key (server/leased-counts.ts): the
 * lease it gives back, if any, and the room it asks for.
 */
export interface LeaseTerms {
  /** The step may be answered `retryAt` instead of refused when only unused leases keep it out. */
  defer: boolean;
  /** The lease given back: as granted, the part not used, and the bucket it went into. */
  release: { granted: number; unused: number; bucket: number } | null;
  /** Room to lease after this step (0: none). */
  ask: number;
  /** How long a lease granted now lasts (ms). */
  leaseMs: number;
}

/** A shared count's answer; with lease terms, also the lease granted and a retry time. */
export interface SharedCountAnswer {
  used: number;
  over: boolean;
  /** Room leased to this replica (counted already), and the bucket it went into. */
  granted?: number;
  leaseBucket?: number;
  /** Not decided: only leases keep it out; count it again after this time (ms since the epoch). */
  retryAt?: number;
}

/** PostgreSQL's counters: each counted step checked and added in one statement, under a row lock. */
export interface SharedCounterStore {
  countShared(request: SharedCountRequest, now: number, allowNewKey: boolean, lease?: LeaseTerms): Promise<SharedCountAnswer>;
  /** Keys with something in their window at `now`. */
  counterUsage(now: number): Promise<StoredCounter[]>;
  /** Deletes idle rows; returns how many rows are left per control id (the key cap is per control). */
  pruneCounters(now: number): Promise<ReadonlyMap<number, number>>;
}

/**
 * Persistence for everything the server keeps, one database behind all five concerns.
 * Asynchronous so that SQLite and PostgreSQL share it.
 */
export interface Store extends ControlStore, EventStore, RecordingStore, HistoryStore, ApprovalStore {
  readonly kind: 'sqlite' | 'postgres';

  /** SQLite: where rate and budget counters of long windows persist. */
  readonly counterRows?: CounterRowStore;
  /** PostgreSQL: counters shared by the replicas. */
  readonly sharedCounters?: SharedCounterStore;

  /**
   * Present on stores shared by several server replicas (PostgreSQL): calls `listener`
   * after another instance (or this one) commits a write. Returns the unsubscribe.
   */
  onChange?(listener: (info: ChangeInfo) => void): () => void;

  close(): Promise<void>;
}
