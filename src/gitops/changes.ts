/**
 * PURE: the changes a plan's operations become, one change per operation in the plan's
 * order (so a refused change's index names its operation). The one translation that
 * `guardctl apply` (over HTTP, gitops/http-target.ts) and hot reload (straight into the
 * store) share. The owner label is already in the operations: the plan carries it.
 */
import type { StoreChange } from '../model/index.js';
import type { ActualAgent, ActualState, AgentFields } from './desired-state.js';
import type { Operation } from './plan.js';

/** Changes that only move ownership or the file a control lives in: its data stays. */
const BOOKKEEPING = new Set(['managed_by', 'source']);

/**
 * `actual` is the state the plan was made against: an agent upsert replaces the whole
 * agent, so fields its document leaves out keep the values the plan saw.
 */
export function changesOf(operations: readonly Operation[], actual: Pick<ActualState, 'agents'>): StoreChange[] {
  const agents = new Map(actual.agents.map((a) => [a.agent_name, a]));
  return operations.map((op) => changeOf(op, agents));
}

function changeOf(op: Operation, agents: ReadonlyMap<string, ActualAgent>): StoreChange {
  switch (op.op) {
    case 'create_control':
      return { op: 'create_control', control: { name: op.name, data: op.data, managed_by: op.managed_by, source: op.source } };
    case 'update_control': {
      const patch: Extract<StoreChange, { op: 'update_control' }>['patch'] = { managed_by: op.managed_by, source: op.source };
      if (op.changes.some((c) => !BOOKKEEPING.has(c.path))) patch.data = op.data;
      return { op: 'update_control', name: op.name, patch };
    }
    case 'delete_control':
      return { op: 'delete_control', name: op.name };
    case 'create_agent':
    case 'update_agent':
      return { op: 'upsert_agent', agent: agentOf(op.agent_name, op.fields, agents.get(op.agent_name)) };
    case 'link':
    case 'unlink':
      return { op: op.op, agent_name: op.agent_name, control_name: op.control_name };
    case 'create_policy':
    case 'update_policy': {
      const { name, description, controls, agents: selector, source } = op.policy;
      return { op: 'upsert_policy', policy: { name, ...(description !== null ? { description } : {}), controls, agents: selector, managed_by: op.managed_by, source } };
    }
    case 'delete_policy':
      return { op: 'delete_policy', name: op.name };
    case 'create_mcp_server':
    case 'update_mcp_server':
      return { op: 'upsert_mcp_server', mcp_server: { ...op.server, managed_by: op.managed_by, source: op.source } };
    case 'delete_mcp_server':
      return { op: 'delete_mcp_server', name: op.name };
  }
}

function agentOf(agentName: string, fields: AgentFields, have: ActualAgent | undefined): Extract<StoreChange, { op: 'upsert_agent' }>['agent'] {
  const pick = <K extends keyof AgentFields>(key: K, fallback: AgentFields[K]): AgentFields[K] => (key in fields ? fields[key] : fallback);
  return {
    agent_name: agentName,
    agent_description: pick('agent_description', have?.agent_description ?? null) ?? null,
    agent_version: pick('agent_version', have?.agent_version ?? null) ?? null,
    steps: pick('steps', have?.steps ?? []) ?? [],
    metadata: pick('metadata', have?.metadata ?? null) ?? null,
    labels: pick('labels', have?.labels ?? {}) ?? {},
  };
}
