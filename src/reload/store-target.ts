/**
 * A GitOps Target that writes nothing while the plan runs: it collects StoreChanges, and
 * `commit()` hands them to `store.applyChanges` at once, so a reload lands in one
 * transaction (all of it or none of it).
 */
import type { Target } from '../gitops/apply.js';
import type { ActualAgent, ActualState, AgentFields } from '../gitops/desired-state.js';
import { fingerprintOf } from '../gitops/fingerprint.js';
import type { ControlPatch, NewAgent, Store, StoreChange } from '../store/types.js';
import { readStoreState } from './store-state.js';

type Op<K extends keyof Target> = Parameters<Target[K]>[0];

/** Changes that only move ownership or the file a control lives in: its data stays. */
const BOOKKEEPING = new Set(['managed_by', 'source']);

export class StoreTarget implements Target {
  readonly changes: StoreChange[] = [];
  readonly #agents: Map<string, ActualAgent>;

  constructor(
    private readonly store: Store,
    /** The state the plan was made against (agent fields a document leaves out are kept from it). */
    actual: ActualState,
    /** Written to `managed_by` of every control this target creates or updates (`watch:<dir>`). */
    private readonly managedBy: string,
  ) {
    this.#agents = new Map(actual.agents.map((a) => [a.agent_name, a]));
  }

  createControl(op: Op<'createControl'>): Promise<void> {
    this.changes.push({
      op: 'create_control',
      control: { name: op.name, data: op.data, managed_by: this.managedBy, source: op.source },
    });
    return Promise.resolve();
  }

  updateControl(op: Op<'updateControl'>): Promise<void> {
    const patch: ControlPatch = { managed_by: this.managedBy, source: op.source };
    if (op.changes.some((c) => !BOOKKEEPING.has(c.path))) patch.data = op.data;
    this.changes.push({ op: 'update_control', name: op.name, patch });
    return Promise.resolve();
  }

  deleteControl(op: Op<'deleteControl'>): Promise<void> {
    this.changes.push({ op: 'delete_control', name: op.name });
    return Promise.resolve();
  }

  upsertAgent(op: Op<'upsertAgent'>): Promise<void> {
    // The store replaces the whole agent; fields the document does not set keep their values.
    const have = this.#agents.get(op.agent_name);
    const agent: NewAgent = {
      agent_name: op.agent_name,
      agent_description: pick(op.fields, 'agent_description', have?.agent_description ?? null),
      agent_version: pick(op.fields, 'agent_version', have?.agent_version ?? null),
      steps: pick(op.fields, 'steps', have?.steps ?? []) ?? [],
      metadata: pick(op.fields, 'metadata', have?.metadata ?? null),
    };
    this.changes.push({ op: 'upsert_agent', agent });
    return Promise.resolve();
  }

  link(op: Op<'link'>): Promise<void> {
    this.changes.push({ op: 'link', agent_name: op.agent_name, control_name: op.control_name });
    return Promise.resolve();
  }

  unlink(op: Op<'unlink'>): Promise<void> {
    this.changes.push({ op: 'unlink', agent_name: op.agent_name, control_name: op.control_name });
    return Promise.resolve();
  }

  async fingerprint(): Promise<string> {
    return fingerprintOf(await readStoreState(this.store));
  }

  /** Applies every collected change in one transaction; returns the agents whose controls changed. */
  async commit(): Promise<string[]> {
    if (this.changes.length === 0) return [];
    const { touched_agents } = await this.store.applyChanges(this.changes);
    return touched_agents;
  }
}

function pick<K extends keyof AgentFields>(fields: AgentFields, key: K, fallback: AgentFields[K]): AgentFields[K] {
  return key in fields ? fields[key] : fallback;
}
