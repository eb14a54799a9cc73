/** The Target that applies a plan to a server through the REST client. */
import type { AgentRegistrationBody, GuardClient } from '../client/index.js';
import { ApiError } from '../errors.js';
import type { AgentPatch } from '../model/index.js';
import type { Target } from './apply.js';
import type { ActualState, AgentFields } from './desired-state.js';
import { fetchActualState } from './fetch-state.js';
import { fingerprintOf } from './fingerprint.js';

export class HttpTarget implements Target {
  /** Control ids by name: from the state the plan was made against, plus what we create. */
  readonly #ids = new Map<string, number>();

  constructor(
    readonly client: GuardClient,
    state: ActualState,
    /** Counts writes, for the benchmark's "zero writes" check and apply's report. */
    readonly counter: { writes: number } = { writes: 0 },
  ) {
    for (const c of state.controls) this.#ids.set(c.name, c.control_id);
  }

  async createControl(op: Parameters<Target['createControl']>[0]): Promise<void> {
    this.counter.writes++;
    const created = await this.client.createControl({ name: op.name, data: op.data, managed_by: op.managed_by, source: op.source });
    this.#ids.set(op.name, created.control_id);
  }

  async updateControl(op: Parameters<Target['updateControl']>[0]): Promise<void> {
    const id = await this.#idOf(op.name);
    if (op.changes.some((c) => c.path !== 'managed_by')) {
      this.counter.writes++;
      await this.client.putControlData(id, op.data);
    }
    this.counter.writes++;
    await this.client.patchControl(id, { managed_by: op.managed_by, source: op.source });
  }

  async deleteControl(op: Parameters<Target['deleteControl']>[0]): Promise<void> {
    const id = await this.#idOf(op.name, true);
    if (id === null) return; // already gone: the goal is reached
    this.counter.writes++;
    try {
      await this.client.deleteControl(id);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) throw error;
    }
    this.#ids.delete(op.name);
  }

  async upsertAgent(op: Parameters<Target['upsertAgent']>[0]): Promise<void> {
    this.counter.writes++;
    if (op.op === 'create_agent') {
      await this.client.initAgent(registrationOf(op.agent_name, op.fields));
      return;
    }
    const patch: AgentPatch = {};
    for (const change of op.changes) {
      const key = change.path as keyof AgentFields;
      (patch as Record<string, unknown>)[key] = op.fields[key] ?? null;
    }
    await this.client.patchAgent(op.agent_name, patch);
  }

  async link(op: Parameters<Target['link']>[0]): Promise<void> {
    this.counter.writes++;
    await this.client.link(op.agent_name, await this.#idOf(op.control_name));
  }

  async unlink(op: Parameters<Target['unlink']>[0]): Promise<void> {
    const id = await this.#idOf(op.control_name, true);
    if (id === null) return;
    this.counter.writes++;
    await this.client.unlink(op.agent_name, id);
  }

  async fingerprint(): Promise<string> {
    return fingerprintOf(await fetchActualState(this.client));
  }

  async #idOf(name: string, optional: true): Promise<number | null>;
  async #idOf(name: string, optional?: false): Promise<number>;
  async #idOf(name: string, optional = false): Promise<number | null> {
    const known = this.#ids.get(name);
    if (known !== undefined) return known;
    // Not in the planned state (for example made by a concurrent run): ask by name.
    const page = await this.client.listControls({ name, limit: 1 });
    const found = page.controls.find((c) => c.name === name);
    if (found) {
      this.#ids.set(name, found.control_id);
      return found.control_id;
    }
    if (optional) return null;
    throw new Error(`control "${name}" does not exist on the server`);
  }
}

function registrationOf(agentName: string, fields: AgentFields): AgentRegistrationBody {
  const body: AgentRegistrationBody = { agent_name: agentName, conflict_mode: 'overwrite' };
  if (fields.agent_description != null) body.agent_description = fields.agent_description;
  if (fields.agent_version != null) body.agent_version = fields.agent_version;
  if (fields.steps) body.steps = fields.steps;
  if (fields.metadata != null) body.metadata = fields.metadata;
  return body;
}
