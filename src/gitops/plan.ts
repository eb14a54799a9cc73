/**
 * PURE: desired state + actual state -> a plan (typed operations). Renders nothing and
 * changes nothing; `apply` is the only side effect (STYLE.md habit 1). The operations
 * refer to controls and agents by name, never by server id, so one plan can be executed
 * over HTTP or straight into a store.
 */
import type { ControlData } from '../model/index.js';
import { deepEqual } from './canonical.js';
import type { ActualAgent, ActualControl, ActualState, AgentFields, DesiredState } from './desired-state.js';
import { planPolicies, type PolicyOperation } from './plan-policies.js';
import { refusedDeletes } from './plan-bindings.js';
import { planMcpServers, type McpServerOperation } from './plan-mcp-servers.js';
import { diffValues, type Change, type Conflict } from './plan-types.js';

export type { Change, Conflict } from './plan-types.js';
export { diffValues } from './plan-types.js';

export type { PolicyOperation, PolicyReach } from './plan-policies.js';
export type { McpServerOperation, McpToolDiff } from './plan-mcp-servers.js';

export type Operation =
  | { op: 'create_control'; name: string; data: ControlData; managed_by: string; source: string | null }
  | {
      op: 'update_control';
      name: string;
      changes: Change[];
      data: ControlData;
      managed_by: string;
      source: string | null;
    }
  /** `managed_by` and `source`: whose control it is and which file defined it, for the reader. */
  | { op: 'delete_control'; name: string; managed_by?: string | null; source?: string | null }
  | { op: 'create_agent'; agent_name: string; fields: AgentFields }
  | { op: 'update_agent'; agent_name: string; changes: Change[]; fields: AgentFields }
  | { op: 'unlink'; agent_name: string; control_name: string }
  | { op: 'link'; agent_name: string; control_name: string }
  | PolicyOperation
  | McpServerOperation;

export type OperationKind = Operation['op'];

/** The owner label prefix of hot reload (`serve --watch`), whose controls the API never writes. */
export const WATCH_OWNER_PREFIX = 'watch:';

export interface PlanSummary {
  create_control: number;
  update_control: number;
  delete_control: number;
  create_agent: number;
  update_agent: number;
  link: number;
  unlink: number;
  create_policy: number;
  update_policy: number;
  delete_policy: number;
  create_mcp_server: number;
  update_mcp_server: number;
  delete_mcp_server: number;
  conflicts: number;
  /** Operations in total (conflicts not included). */
  total: number;
}

/** A control of this owner that --prune leaves alone: another directory defined it. */
export interface KeptControl {
  name: string;
  managed_by: string;
  source: string;
}

export interface Plan {
  /** The owner label written to `managed_by`, for example `gitops:default`. */
  managed_by: string;
  /** In the order they must run (OPERATION_ORDER): whoever executes a plan keeps it. */
  operations: Operation[];
  conflicts: Conflict[];
  /** With prune and a directory: this owner's controls defined outside the directory, not deleted. */
  kept: KeptControl[];
  summary: PlanSummary;
}

export interface PlanOptions {
  /** Delete controls this owner manages that the directory no longer defines. */
  prune?: boolean;
  /**
   * The directory as its documents' `source` names it (`controls`): prune then deletes only
   * the owner's controls whose source lies inside it (or is unknown), so a second directory
   * applied under the same owner never deletes the first one's controls.
   */
  directory?: string;
  /** Take over controls of the same name that another owner (or a person) made. */
  force?: boolean;
  /**
   * Owner ids whose controls of the same name this plan takes over (`--adopt default`):
   * the narrow --force, for a directory that was applied under another owner before.
   */
  adopt?: readonly string[];
  /** Owner id; `managed_by` becomes `gitops:<owner>`. Default `default`. */
  owner?: string;
  /**
   * The owner label itself, for an owner that is not a GitOps run (hot reload plans as
   * `watch:<dir>`); it wins over `owner`. Controls carrying it are this plan's own.
   */
  managedBy?: string;
  /**
   * Also update a control whose data is unchanged but whose document moved (its `source`
   * differs), so that messages about it name the right file. Hot reload asks for it.
   */
  followSources?: boolean;
}

export const DEFAULT_OWNER = 'default';

/**
 * The order the plan lists operations in, the order apply runs them: controls before
 * links, links before unlinks, unlinks before deletes. Links come before unlinks so that
 * an apply stopped anywhere (a refused batch, a killed CLI) leaves every agent with at
 * least all of its old controls or all of its new ones, never fewer than both.
 */
export const OPERATION_ORDER: readonly OperationKind[] = [
  'create_control',
  'update_control',
  'create_agent',
  'update_agent',
  'create_policy',
  'update_policy',
  'create_mcp_server',
  'update_mcp_server',
  'link',
  'unlink',
  'delete_policy',
  'delete_mcp_server',
  'delete_control',
];

export function ownerLabel(owner = DEFAULT_OWNER): string {
  return `gitops:${owner}`;
}

export function plan(desired: DesiredState, actual: ActualState, options: PlanOptions = {}): Plan {
  const managedBy = options.managedBy ?? ownerLabel(options.owner);
  const operations: Operation[] = [];
  const conflicts: Conflict[] = [];
  const actualControls = new Map(actual.controls.map((c) => [c.name, c]));
  const desiredNames = new Set(desired.controls.map((c) => c.name));
  const adopted = new Set((options.adopt ?? []).map((owner) => ownerLabel(owner)));
  // A watched directory's controls are written only by its hot reload: no flag takes them.
  const watchedElsewhere = (managed: string | null | undefined) =>
    !managedBy.startsWith(WATCH_OWNER_PREFIX) && typeof managed === 'string' && managed.startsWith(WATCH_OWNER_PREFIX);
  const takesOver = (have: ActualControl) =>
    !watchedElsewhere(have.managed_by) && (Boolean(options.force) || (have.managed_by !== null && adopted.has(have.managed_by)));

  for (const want of desired.controls) {
    const have = actualControls.get(want.name);
    if (!have) {
      operations.push({ op: 'create_control', name: want.name, data: want.data, managed_by: managedBy, source: want.source });
      continue;
    }
    const changes = diffControl(have, want.data);
    const owned = have.managed_by === managedBy;
    if (!owned) {
      // Identical content needs no write, so there is nothing to conflict about; --force
      // and --adopt still take ownership so that prune may later delete it.
      if (changes.length === 0 && !takesOver(have)) continue;
      if (!takesOver(have)) {
        conflicts.push({ name: want.name, managed_by: have.managed_by, changes });
        continue;
      }
      changes.push({ path: 'managed_by', before: have.managed_by, after: managedBy });
    }
    if (changes.length === 0 && options.followSources && have.source !== want.source) {
      changes.push({ path: 'source', before: have.source, after: want.source });
    }
    if (changes.length > 0) {
      operations.push({ op: 'update_control', name: want.name, changes, data: want.data, managed_by: managedBy, source: want.source });
    }
  }

  const actualAgents = new Map(actual.agents.map((a) => [a.agent_name, a]));
  for (const want of desired.agents) {
    const have = actualAgents.get(want.agent_name);
    if (!have) {
      operations.push({ op: 'create_agent', agent_name: want.agent_name, fields: want.fields });
    } else {
      const changes = diffAgent(have, want.fields);
      if (changes.length > 0) operations.push({ op: 'update_agent', agent_name: want.agent_name, changes, fields: want.fields });
    }
    const current = new Set(have?.controls ?? []);
    const target = new Set(want.controls);
    const linkOrConflict = (op: 'link' | 'unlink', name: string) => {
      const owner = actualControls.get(name)?.managed_by;
      if (watchedElsewhere(owner)) conflicts.push({ name, managed_by: owner ?? null, changes: [], agent_name: want.agent_name, op });
      else operations.push({ op, agent_name: want.agent_name, control_name: name });
    };
    for (const name of want.controls) if (!current.has(name)) linkOrConflict('link', name);
    for (const name of [...current].sort()) if (!target.has(name)) linkOrConflict('unlink', name);
  }

  const kept: KeptControl[] = [];
  if (options.prune) {
    const inside = options.directory === undefined ? () => true : insideDirectory(options.directory);
    for (const have of actual.controls) {
      if (desiredNames.has(have.name) || have.managed_by !== managedBy) continue;
      if (have.source !== null && !inside(have.source)) kept.push({ name: have.name, managed_by: managedBy, source: have.source });
      else operations.push({ op: 'delete_control', name: have.name, managed_by: have.managed_by, source: have.source });
    }
  }

  const policies = planPolicies(desired, actual, managedBy, { prune: Boolean(options.prune), force: Boolean(options.force), followSources: Boolean(options.followSources) });
  operations.push(...policies.operations);
  conflicts.push(...policies.conflicts);
  const servers = planMcpServers(desired, actual, managedBy, { prune: Boolean(options.prune), force: Boolean(options.force), followSources: Boolean(options.followSources) });
  operations.push(...servers.operations);
  conflicts.push(...servers.conflicts);
  const deleted = operations.flatMap((o) => (o.op === 'delete_control' ? [o.name] : []));
  conflicts.push(...refusedDeletes(deleted, policies.operations, actual));

  const ordered = inPlanOrder(operations);
  kept.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { managed_by: managedBy, operations: ordered, conflicts, kept, summary: summarise(ordered, conflicts) };
}

/** Whether a `source` (`dir/file.yaml:3`) names a file below `directory`, compared as written. */
function insideDirectory(directory: string): (source: string) => boolean {
  const dir = directory.replace(/\\/g, '/').replace(/^(\.\/)+/, '').replace(/\/+$/, '');
  if (dir === '' || dir === '.') return (source) => !source.startsWith('../') && !source.startsWith('/');
  // `dir:` too: a single file given instead of a directory keeps its own controls' deletes.
  return (source) => {
    const file = source.replace(/\\/g, '/').replace(/^(\.\/)+/, '');
    return file.startsWith(`${dir}/`) || file.startsWith(`${dir}:`);
  };
}

/** OPERATION_ORDER, then by name: the one place operations are ordered (a plan read from a file comes through it too). */
export function inPlanOrder(operations: readonly Operation[]): Operation[] {
  const rank = (o: Operation) => OPERATION_ORDER.indexOf(o.op);
  const key = (o: Operation) => ('name' in o ? o.name : `${o.agent_name}\u0000${'control_name' in o ? o.control_name : ''}`);
  return [...operations].sort((a, b) => rank(a) - rank(b) || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

export function summarise(operations: readonly Operation[], conflicts: readonly Conflict[]): PlanSummary {
  const summary: PlanSummary = {
    create_control: 0,
    update_control: 0,
    delete_control: 0,
    create_agent: 0,
    update_agent: 0,
    link: 0,
    unlink: 0,
    create_policy: 0,
    update_policy: 0,
    delete_policy: 0,
    create_mcp_server: 0,
    update_mcp_server: 0,
    delete_mcp_server: 0,
    conflicts: conflicts.length,
    total: operations.length,
  };
  for (const o of operations) summary[o.op]++;
  return summary;
}

export function hasChanges(p: Pick<Plan, 'operations' | 'conflicts'>): boolean {
  return p.operations.length > 0 || p.conflicts.length > 0;
}

/** Field-level differences between the stored control and the directory's data. */
export function diffControl(have: ActualControl, want: ControlData): Change[] {
  if (have.data === null) return [{ path: 'data', before: null, after: want }];
  const changes = diffValues('', have.data, want);
  // The record's enabled flag is what evaluation obeys; a drift there is a change too.
  if (have.enabled !== want.enabled && !changes.some((c) => c.path === 'enabled')) {
    changes.push({ path: 'enabled', before: have.enabled, after: want.enabled });
  }
  return changes;
}

function diffAgent(have: ActualAgent, want: AgentFields): Change[] {
  const changes: Change[] = [];
  for (const key of ['agent_description', 'agent_version', 'steps', 'metadata', 'labels'] as const) {
    if (!(key in want)) continue;
    if (key === 'labels') {
      if (!deepEqual(have.labels ?? {}, want.labels ?? {})) changes.push({ path: 'labels', before: have.labels ?? {}, after: want.labels ?? {} });
      continue;
    }
    const after = want[key] ?? null;
    const before = have[key] ?? null;
    if (!deepEqual(before, after)) changes.push({ path: key, before, after });
  }
  return changes;
}
