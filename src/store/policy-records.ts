/**
 * What both stores share about policies: records from rows, history snapshots, the union
 * of an agent's links and policies, and membership resolution. Pure: no database here.
 */
import { selectsAgent, type AgentSelector, type BindingSource, type ControlRecord, type Labels, type NewPolicy, type PolicyRecord } from '../model/index.js';

/** A policy row with its bound controls' names (in their order) and its parsed selector. */
export function policyRecordOf(
  row: { policy_id: number | string; name: string; description: string | null; managed_by: string | null; source: string | null },
  own: { controls: string[]; agents: AgentSelector; created_at: string; updated_at: string },
): PolicyRecord {
  return {
    policy_id: Number(row.policy_id),
    name: row.name,
    description: row.description,
    controls: own.controls,
    agents: own.agents,
    managed_by: row.managed_by,
    source: row.source,
    created_at: own.created_at,
    updated_at: own.updated_at,
  };
}

/** What a policy's history entries keep. */
export function policySnapshot(p: Pick<PolicyRecord, 'name' | 'description' | 'controls' | 'agents' | 'managed_by' | 'source'>): object {
  return { name: p.name, description: p.description, controls: p.controls, agents: p.agents, managed_by: p.managed_by, source: p.source };
}

/** The snapshot of a policy about to be written, for comparing with the stored one. */
export function snapshotOfNew(policy: NewPolicy): object {
  return policySnapshot({
    name: policy.name,
    description: policy.description ?? null,
    controls: policy.controls,
    agents: policy.agents,
    managed_by: policy.managed_by ?? null,
    source: policy.source ?? null,
  });
}

/**
 * An agent's set from rows of (control, where it came from) ordered by control id: each
 * control once, however many links and policies bind it, so nothing is evaluated twice.
 */
export function unionOfBindings(rows: ReadonlyArray<{ control: ControlRecord; via: string }>): {
  controls: ControlRecord[];
  sources: Map<number, BindingSource[]>;
} {
  const controls: ControlRecord[] = [];
  const sources = new Map<number, BindingSource[]>();
  for (const { control, via } of rows) {
    let list = sources.get(control.control_id);
    if (!list) {
      list = [];
      sources.set(control.control_id, list);
      controls.push(control);
    }
    if (!list.includes(via as BindingSource)) list.push(via as BindingSource);
  }
  for (const list of sources.values()) list.sort((a, b) => (a === 'link' ? -1 : b === 'link' ? 1 : a.localeCompare(b)));
  return { controls, sources };
}

/** The agents (of those given) a selector picks. */
export function membersOf(selector: AgentSelector, agents: Iterable<{ agent_name: string; labels: Labels }>): string[] {
  const members: string[] = [];
  for (const agent of agents) if (selectsAgent(selector, agent.agent_name, agent.labels)) members.push(agent.agent_name);
  return members;
}

/** The policies (of those given) that select one agent. */
export function policiesOf(agentName: string, labels: Labels, policies: Iterable<{ policy_id: number; agents: AgentSelector }>): number[] {
  const ids: number[] = [];
  for (const p of policies) if (selectsAgent(p.agents, agentName, labels)) ids.push(p.policy_id);
  return ids;
}

/**
 * The policies (of those selecting an agent now) that would no longer select it with
 * `labels`, by name: what a registration may not do (StoreError `leaves_policy`).
 */
export function policiesLeft(agentName: string, labels: Labels, selecting: Iterable<{ name: string; agents: AgentSelector }>): string[] {
  const left: string[] = [];
  for (const p of selecting) if (!selectsAgent(p.agents, agentName, labels)) left.push(p.name);
  return left.sort();
}

/** Whether two label sets are the same (key order aside). */
export function sameLabels(a: Labels, b: Labels): boolean {
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}
