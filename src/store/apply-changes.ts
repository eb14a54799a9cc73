/**
 * The one dispatcher of `applyChanges` both dialects share: which step each kind of
 * change runs, which agents it touches, and how a refused change is named. Each dialect
 * supplies the steps, run inside the transaction it opened (synchronous for SQLite, whose
 * transactions cannot await; asynchronous for PostgreSQL).
 */
import { changeLabel, type ControlPatch, type NewAgent, type NewControl, type NewMcpServer, type NewPolicy, type StoreChange } from '../model/index.js';
import { uniqueSorted } from './records.js';
import { StoreError } from './types.js';

/** One dialect's writes inside an open transaction; `R` is `T` or `Promise<T>`. */
export interface ChangeSteps<Agents, Done> {
  createControl(control: NewControl): Done;
  /** Returns the agents linked to the control. */
  updateControl(name: string, patch: ControlPatch): Agents;
  /** Returns the agents the control was linked to. */
  deleteControl(name: string): Agents;
  upsertAgent(agent: NewAgent): Done;
  link(agentName: string, controlName: string): Done;
  unlink(agentName: string, controlName: string): Done;
  /** Creates or replaces the policy; returns the agents whose set changed. */
  upsertPolicy(policy: NewPolicy): Agents;
  /** Returns the agents the policy guarded. */
  deletePolicy(name: string): Agents;
  upsertMcpServer(server: NewMcpServer): Done;
  deleteMcpServer(name: string): Done;
}

type SyncSteps = ChangeSteps<string[], unknown>;
type AsyncSteps = ChangeSteps<Promise<string[]>, Promise<unknown>>;

/** Runs a batch inside an open synchronous transaction; returns the agents touched. */
export function applyChangesSync(changes: readonly StoreChange[], steps: SyncSteps, mapError: (error: unknown) => unknown): string[] {
  const touched: string[] = [];
  changes.forEach((change, index) => {
    try {
      touched.push(...touchedBy(change, dispatch<string[], unknown>(change, steps)));
    } catch (error) {
      throw changeFailure(mapError(error), change, index);
    }
  });
  return uniqueSorted(touched);
}

/** Runs a batch inside an open asynchronous transaction, one change after the other. */
export async function applyChangesAsync(
  changes: readonly StoreChange[],
  steps: AsyncSteps,
  mapError: (error: unknown) => unknown,
): Promise<string[]> {
  const touched: string[] = [];
  for (const [index, change] of changes.entries()) {
    try {
      touched.push(...touchedBy(change, await dispatch<Promise<string[]>, Promise<unknown>>(change, steps)));
    } catch (error) {
      throw changeFailure(mapError(error), change, index);
    }
  }
  return uniqueSorted(touched);
}

function dispatch<Agents, Done>(change: StoreChange, steps: ChangeSteps<Agents, Done>): Agents | Done {
  switch (change.op) {
    case 'create_control':
      return steps.createControl(change.control);
    case 'update_control':
      return steps.updateControl(change.name, change.patch);
    case 'delete_control':
      return steps.deleteControl(change.name);
    case 'upsert_agent':
      return steps.upsertAgent(change.agent);
    case 'link':
      return steps.link(change.agent_name, change.control_name);
    case 'unlink':
      return steps.unlink(change.agent_name, change.control_name);
    case 'upsert_policy':
      return steps.upsertPolicy(change.policy);
    case 'delete_policy':
      return steps.deletePolicy(change.name);
    case 'upsert_mcp_server':
      return steps.upsertMcpServer(change.mcp_server);
    case 'delete_mcp_server':
      return steps.deleteMcpServer(change.name);
  }
}

/**
 * The agents whose controls a change touched: those linked to an updated or deleted
 * control or written policy (its step's answer), the agent upserted, linked or unlinked;
 * none for a create.
 */
function touchedBy(change: StoreChange, answer: unknown): string[] {
  switch (change.op) {
    case 'create_control':
    case 'upsert_mcp_server':
    case 'delete_mcp_server':
      // A pinned server guards through gateways, not agents' control sets.
      return [];
    case 'update_control':
    case 'delete_control':
    case 'upsert_policy':
    case 'delete_policy':
      return answer as string[];
    case 'upsert_agent':
      return [change.agent.agent_name];
    case 'link':
    case 'unlink':
      return [change.agent_name];
  }
}

/** A failure inside a batch as a StoreError that names the change, keeping its kind. */
export function changeFailure(error: unknown, change: StoreChange, index: number): StoreError {
  const reason = error instanceof Error ? error.message : String(error);
  const kind = error instanceof StoreError ? error.kind : 'unavailable';
  return new StoreError(kind, `${changeLabel(change, index)}: ${reason}`, { index, reason }, error instanceof StoreError ? error.issues : undefined);
}
