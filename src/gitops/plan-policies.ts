/**
 * PURE: the policy part of a plan. Each policy of the directory is created or updated
 * (field diff) and says which agents it will reach once applied: the server's agents with
 * the labels the directory gives them, plus the directory's new agents. `new_agents`
 * counts the agents it does not guard today. With prune, the owner's policies the
 * directory no longer defines are deleted.
 */
import { selectsAgent, type AgentSelector, type Labels } from '../model/index.js';
import { deepEqual } from './canonical.js';
import type { ActualPolicy, ActualState, DesiredPolicy, DesiredState } from './desired-state.js';
import type { Change, Conflict } from './plan-types.js';

/** How many agents a policy guards after the apply, and how many of them it does not guard now. */
export interface PolicyReach {
  agents: number;
  new_agents: number;
}

export type PolicyOperation =
  | { op: 'create_policy'; name: string; policy: DesiredPolicy; managed_by: string; reach: PolicyReach }
  | { op: 'update_policy'; name: string; changes: Change[]; policy: DesiredPolicy; managed_by: string; reach: PolicyReach }
  | { op: 'delete_policy'; name: string; managed_by: string | null; source: string | null; reach: PolicyReach };

/** Every agent's labels once the apply is done: the directory's labels win over the server's. */
function agentsAfter(desired: DesiredState, actual: ActualState): Array<{ agent_name: string; labels: Labels }> {
  const byName = new Map<string, Labels>();
  for (const a of actual.agents) byName.set(a.agent_name, a.labels ?? {});
  for (const a of desired.agents) byName.set(a.agent_name, a.fields.labels ?? byName.get(a.agent_name) ?? {});
  return [...byName].map(([agent_name, labels]) => ({ agent_name, labels }));
}

function membersOf(selector: AgentSelector | undefined, agents: ReadonlyArray<{ agent_name: string; labels: Labels }>): Set<string> {
  const out = new Set<string>();
  if (!selector) return out;
  for (const a of agents) if (selectsAgent(selector, a.agent_name, a.labels)) out.add(a.agent_name);
  return out;
}

function diffPolicy(have: ActualPolicy, want: DesiredPolicy): Change[] {
  const changes: Change[] = [];
  for (const key of ['description', 'controls', 'agents'] as const) {
    if (!deepEqual(have[key] ?? null, want[key] ?? null)) changes.push({ path: key, before: have[key], after: want[key] });
  }
  return changes;
}

export function planPolicies(
  desired: DesiredState,
  actual: ActualState,
  managedBy: string,
  options: { prune: boolean; force: boolean; followSources: boolean },
): { operations: PolicyOperation[]; conflicts: Conflict[] } {
  const operations: PolicyOperation[] = [];
  const conflicts: Conflict[] = [];
  // Without policies in the directory and none read from the server there is nothing to say.
  if (desired.policies === undefined) return { operations, conflicts };
  const before = actual.agents.map((a) => ({ agent_name: a.agent_name, labels: a.labels ?? {} }));
  const after = agentsAfter(desired, actual);
  const actualPolicies = new Map((actual.policies ?? []).map((p) => [p.name, p]));
  for (const want of desired.policies) {
    const have = actualPolicies.get(want.name);
    const now = membersOf(have?.agents, before);
    const then = membersOf(want.agents, after);
    const reach = { agents: then.size, new_agents: [...then].filter((a) => !now.has(a)).length };
    if (!have) {
      operations.push({ op: 'create_policy', name: want.name, policy: want, managed_by: managedBy, reach });
      continue;
    }
    const changes = diffPolicy(have, want);
    if (have.managed_by !== managedBy) {
      if (changes.length === 0 && !options.force) continue;
      if (!options.force) {
        conflicts.push({ name: want.name, managed_by: have.managed_by, changes });
        continue;
      }
      changes.push({ path: 'managed_by', before: have.managed_by, after: managedBy });
    }
    if (changes.length === 0 && options.followSources && have.source !== want.source) changes.push({ path: 'source', before: have.source, after: want.source });
    if (changes.length > 0) operations.push({ op: 'update_policy', name: want.name, changes, policy: want, managed_by: managedBy, reach });
  }
  if (options.prune) {
    const wanted = new Set(desired.policies.map((p) => p.name));
    for (const have of actual.policies ?? []) {
      if (wanted.has(have.name) || have.managed_by !== managedBy) continue;
      const now = membersOf(have.agents, before);
      operations.push({ op: 'delete_policy', name: have.name, managed_by: have.managed_by, source: have.source, reach: { agents: 0, new_agents: 0 - now.size } });
    }
  }
  return { operations, conflicts };
}
