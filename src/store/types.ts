import type { ApprovalStore } from './approval-store.js';
import type {
  AgentPatch,
  AgentRecord,
  ControlMode,
  ControlPatch,
  ControlRecord,
  NewAgent,
  NewControl,
  NewPolicy,
  BindingSource,
  FieldIssue,
  PolicyRecord,
  StoreChange,
  StoredEvent,
  WriteOrigin,
} from '../model/index.js';
import type { HistoryStore, RestoreOutcome } from './history.js';
import type { McpServerStore } from './mcp-server-records.js';
import type { StoreSharing } from './store-sharing.js';

export type { CounterRowStore, LeaseTerms, SharedCountAnswer, SharedCountRequest, SharedCounterStore, StoredCounter } from '../counting/types.js';
export type { ControlPatch, NewAgent, NewControl, StoreChange } from '../model/index.js';
export type { ChangeInfo, ChangeSource, LocalParts, SharedParts, StoreSharing } from './store-sharing.js';
export type { SessionRowStore, SharedSessionStep, SharedSessionStore, StoredSession, StoredSessionLabel } from './session-store.js';
export type { ApprovalDecision, ApprovalOutcome, ApprovalQuery, ApprovalRequest, ApprovalStore, DecideOutcome, UsedApproval } from './approval-store.js';

export interface ControlPage {
  controls: ControlRecord[];
  next_cursor: number | null;
  has_more: boolean;
  total: number;
}

export interface PolicyPage {
  policies: PolicyRecord[];
  next_cursor: number | null;
  has_more: boolean;
  total: number;
}

/**
 * An agent's controls: the union of its links and its policies' controls, each control
 * once (ordered by id), with where each came from; and the store revision they were read at.
 */
export interface AgentControlSet {
  controls: ControlRecord[];
  revision: number;
  /** By control id: `link` and/or `policy:<name>`, links first, then policies by name. */
  sources: ReadonlyMap<number, readonly BindingSource[]>;
}

/**
 * Policies: controls bound to every agent a selector picks. Membership is resolved when a
 * policy or an agent is written (in the same transaction), never when a set is read.
 * Unknown control names raise StoreError('not_found'), a taken name 'conflict'.
 */
export interface PolicyStore {
  createPolicy(policy: NewPolicy, origin?: WriteOrigin): Promise<PolicyRecord>;
  getPolicy(id: number): Promise<PolicyRecord | null>;
  getPolicyByName(name: string): Promise<PolicyRecord | null>;
  /** Ordered by policy_id; `cursor` is the last id of the previous page. */
  listPolicies(page: { cursor?: number | undefined; limit: number }): Promise<PolicyPage>;
  listAllPolicies(): Promise<PolicyRecord[]>;
  /** Replaces the policy whole; returns it and the agents whose set changed (members before and after). */
  replacePolicy(id: number, policy: NewPolicy, origin?: WriteOrigin): Promise<{ policy: PolicyRecord; touched_agents: string[] }>;
  /** Returns the agents it guarded. */
  deletePolicy(id: number, origin?: WriteOrigin): Promise<{ touched_agents: string[] }>;
  /** The registered agents the policy selects now, by name. */
  policyMembers(id: number): Promise<string[]>;
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
  session_id?: string; // only events of steps of this session
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
  /** The step's session (docs/sessions.md); null or absent without one. */
  session_id?: string | null;
}

export interface RecordedStepRow {
  id: number;
  timestamp: string;
  agent_name: string;
  stage: 'pre' | 'post';
  /** The parsed step as recorded; replay re-validates it against today's model. */
  step: unknown;
  decision: string;
  /** The step's session; null without one. */
  session_id: string | null;
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

/** Which change of a batch failed, and why (the store's message without the change named). */
export interface FailedChange {
  /** 0-based position of the change in the batch. */
  index: number;
  reason: string;
}

export interface UpsertAgentOptions {
  /**
   * The write is a registration (`initAgent`, any key): labels that would take a
   * registered agent out of a policy selecting it now are refused (StoreError 'conflict',
   * issue code `leaves_policy`), checked in the write's transaction against the policies
   * as they are then. Administrators move agents with patchAgent or an apply. Labels left
   * out keep the stored ones as read in that transaction (a label change committed
   * meanwhile is neither undone nor reported as leaving a policy); otherwise they mean {}.
   */
  registration?: boolean;
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
    /**
     * Why, field by field, with a code clients branch on (`bound_by_policy`,
     * `leaves_policy`): the problem body's `errors[]`.
     */
    readonly issues?: FieldIssue[],
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
  /**
   * Deletes the control and its links; returns the agents it was linked to. A control a
   * policy binds is refused (StoreError 'conflict', issue code `bound_by_policy`): taking
   * it out of the policy is a write of the policy, never a side effect.
   */
  deleteControl(id: number, origin?: WriteOrigin): Promise<{ unlinked_agents: string[] }>;

  getAgent(name: string): Promise<AgentRecord | null>;
  listAgents(): Promise<AgentRecord[]>;
  /** Inserts or replaces the agent; returns the stored record and whether it existed. */
  upsertAgent(agent: NewAgent, origin?: WriteOrigin, options?: UpsertAgentOptions): Promise<{ agent: AgentRecord; created: boolean }>;
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
  /** The agents the control guards: linked, or members of a policy binding it. */
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
  agentControlSet(agentName: string): Promise<AgentControlSet | null>;

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

/**
 * Persistence for everything the server keeps, one database behind all five concerns.
 * Asynchronous so that SQLite and PostgreSQL share it. What only one kind of database
 * does (counters and sessions kept apart per server or shared, change notifications)
 * is in `sharing`, whose `mode` tells which (store-sharing.ts).
 */
export interface Store extends ControlStore, PolicyStore, McpServerStore, EventStore, RecordingStore, HistoryStore, ApprovalStore {
  readonly kind: 'sqlite' | 'postgres';
  readonly sharing: StoreSharing;
  close(): Promise<void>;
}
