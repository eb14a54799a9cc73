/**
 * What a write of controls, agents, links or policies records, written once for both
 * dialects: the StoreError it raises for a taken name or an unknown row, the history entry
 * it stores, and the agents a policy write touches. sqlite/ and postgres/ keep only their
 * queries and hand these the records they read and wrote; the entries' snapshots and
 * notes (history.ts) are thereby the same whichever database wrote them.
 */
import type { AgentRecord, ControlRecord, ControlSnapshot, PolicyRecord } from '../model/index.js';
import { agentEntry, agentSnapshot, controlEntry, controlSnapshot, linkEntry, policyEntry, sameSnapshot, unlinkedNote } from './history.js';
import type { NewChangeEntry, RestoreOutcome } from './history.js';
import { policySnapshot } from './policy-records.js';
import { uniqueSorted } from './records.js';
import { StoreError } from './types.js';

/** The refusals of writes (StoreError 'conflict' and 'not_found'), worded once. */
export const refusal = {
  controlNameTaken: (name: string) => new StoreError('conflict', `a control named "${name}" already exists`),
  policyNameTaken: (name: string) => new StoreError('conflict', `a policy named "${name}" already exists`),
  /** PostgreSQL reads ids of bigint columns as strings: either reads the same. */
  controlNotFound: (id: number | string) => new StoreError('not_found', `control ${id} does not exist`),
  namedControlNotFound: (name: string) => new StoreError('not_found', `control "${name}" does not exist`),
  agentNotFound: (name: string) => new StoreError('not_found', `agent "${name}" does not exist`),
  policyNotFound: (id: number) => new StoreError('not_found', `policy ${id} does not exist`),
  namedPolicyNotFound: (name: string) => new StoreError('not_found', `policy "${name}" does not exist`),
  /**
   * A control some policy binds cannot be deleted: every agent the policy selects would
   * lose the guard with no write of the policy to show for it.
   */
  controlBoundByPolicy: (control: string, policies: readonly string[]) => {
    const names = policies.map((p) => `"${p}"`).join(', ');
    const which = policies.length === 1 ? `policy ${names} binds it` : `policies ${names} bind it`;
    return new StoreError(
      'conflict',
      `control "${control}" cannot be deleted: ${which}; remove it from the controls of ${policies.length === 1 ? 'that policy' : 'those policies'} (or delete ${policies.length === 1 ? 'it' : 'them'}) first`,
      undefined,
      [{ field: 'control_id', code: 'bound_by_policy', message: `bound by ${policies.length === 1 ? 'policy' : 'policies'} ${names}` }],
    );
  },
  /**
   * A registration (anyone with a key) taking a registered agent out of policies that
   * select it now: moving an agent out of a guard is an administrator's act.
   */
  registrationLeavesPolicies: (agentName: string, policies: readonly string[]) => {
    const names = policies.map((p) => `"${p}"`).join(', ');
    return new StoreError(
      'conflict',
      `these labels would take agent "${agentName}" out of ${policies.length === 1 ? 'policy' : 'policies'} ${names}, which guard it now; a registration cannot remove an agent from a policy: change its labels with PATCH /api/v1/agents/${agentName} (admin key) or guardctl apply`,
      undefined,
      [{ field: 'labels', code: 'leaves_policy', message: `the labels leave ${names}` }],
    );
  },
};

/** The history entry of each write (history.ts), from the records before and after it. */
export const writeEntry = {
  controlCreated: (control: ControlRecord): NewChangeEntry => controlEntry('create', control.control_id, control.name, null, controlSnapshot(control)),
  controlUpdated: (before: ControlRecord, after: ControlRecord): NewChangeEntry =>
    controlEntry('update', after.control_id, after.name, controlSnapshot(before), controlSnapshot(after)),
  /** `linkedAgents`: the agents it was linked to (not those of its policies), named in the note. */
  controlDeleted: (control: ControlRecord, linkedAgents: readonly string[]): NewChangeEntry =>
    controlEntry('delete', control.control_id, control.name, controlSnapshot(control), null, linkedAgents.length > 0 ? `unlinked from ${linkedAgents.join(', ')}` : null),
  controlRestored: (before: ControlRecord | null, after: ControlRecord, revision: number): NewChangeEntry =>
    controlEntry('restore', after.control_id, after.name, before ? controlSnapshot(before) : null, controlSnapshot(after), `restored revision ${revision}`),
  /** An agent registered (`before` null) or replaced. */
  agentWritten: (before: AgentRecord | null, after: AgentRecord): NewChangeEntry =>
    agentEntry(before ? 'update' : 'create', after.agent_name, before ? agentSnapshot(before) : null, agentSnapshot(after)),
  /** `controls`: those it was linked to, named in the note. */
  agentDeleted: (agent: AgentRecord, controls: ReadonlyArray<{ name: string }>): NewChangeEntry =>
    agentEntry('delete', agent.agent_name, agentSnapshot(agent), null, unlinkedNote(controls)),
  link: (op: 'link' | 'unlink', agentName: string, controlId: number, controlName: string): NewChangeEntry => linkEntry(op, agentName, controlId, controlName),
  /** A policy created (`before` null) or replaced; `members`: how many agents it guards now. */
  policyWritten: (before: PolicyRecord | null, after: PolicyRecord, members: number): NewChangeEntry =>
    policyEntry(before ? 'update' : 'create', after.policy_id, before ? policySnapshot(before) : null, policySnapshot(after), `guards ${members} agent(s)`),
  /** `members`: how many agents it guarded. */
  policyDeleted: (policy: PolicyRecord, members: number): NewChangeEntry =>
    policyEntry('delete', policy.policy_id, policySnapshot(policy), null, members > 0 ? `guarded ${members} agent(s)` : null),
};

/** The agents a policy write touches: its members before it and after it, each once. */
export function policyWriteTouches(membersBefore: readonly string[], membersAfter: readonly string[]): string[] {
  return uniqueSorted([...membersBefore, ...membersAfter]);
}

/**
 * The answer of a restore that writes nothing because the control already is as
 * `target` says; null when it must write.
 */
export function unchangedRestore(current: ControlRecord | null, target: ControlSnapshot): RestoreOutcome | null {
  return current && sameSnapshot(controlSnapshot(current), target) ? { ok: true, control: current, changed: false, recreated: false } : null;
}

/** The refusal of a restore whose name another control holds now; null when the name is free or its own. */
export function nameTakenRestore(controlId: number, target: ControlSnapshot, holderId: number | undefined): RestoreOutcome | null {
  return holderId !== undefined && holderId !== controlId ? { ok: false, reason: 'name_taken', name: target.name } : null;
}
