/**
 * The Target that applies a plan to a server through the REST client. Apply sends it
 * batches (`POST /changes`, one transaction per request); the per-operation methods
 * remain for callers that drive it one operation at a time.
 */
import type { AgentRegistrationBody, GuardClient } from '../client/index.js';
import { ApiError } from '../errors.js';
import type { AgentPatch } from '../model/index.js';
import { BatchFailure, STALE_REVISION, type BatchTarget, type Target } from './apply.js';
import { changesOf } from './changes.js';
import type { ActualState, AgentFields } from './desired-state.js';
import { fetchActualState } from './fetch-state.js';
import { fingerprintOf } from './fingerprint.js';
import type { McpServerOperation, Operation, PolicyOperation } from './plan.js';

/** Changes per request: half the server's maximum (500), a few transactions for 1,000 controls. */
export const CHANGES_PER_REQUEST = 250;
/** Estimated JSON bytes per request: half the server's default body limit (1 MiB), for big controls. */
export const BYTES_PER_REQUEST = 512 * 1024;

export class HttpTarget implements BatchTarget {
  /** Control ids by name: from the state the plan was made against, plus what we create. */
  readonly #ids = new Map<string, number>();
  /** Names of controls made by batches (their ids are not needed: changes name controls). */
  readonly #created = new Set<string>();
  /** The agents the plan saw: an upsert keeps the fields a document leaves out. */
  readonly #actual: Pick<ActualState, 'agents'>;
  /**
   * The store revision the next batch expects: the plan's, then each batch's answer. A
   * write by anyone else in between (a second apply, a hot reload, a person) makes the
   * server refuse the batch whole (409 stale_revision).
   */
  #revision: number | undefined;

  constructor(
    readonly client: GuardClient,
    state: ActualState,
    /** Counts writes, for the benchmark's "zero writes" check and apply's report. */
    readonly counter: { writes: number } = { writes: 0 },
  ) {
    for (const c of state.controls) this.#ids.set(c.name, c.control_id);
    this.#actual = { agents: state.agents };
    this.#revision = state.revision;
  }

  /** Splits one step of the plan into requests, in order, within the count and size bounds. */
  batchesOf(operations: readonly Operation[]): Operation[][] {
    const batches: Operation[][] = [];
    let current: Operation[] = [];
    let bytes = 0;
    for (const op of operations) {
      // The operation's JSON (with its diff) overestimates the change it becomes: a safe bound.
      const size = JSON.stringify(op).length;
      if (current.length > 0 && (current.length >= CHANGES_PER_REQUEST || bytes + size > BYTES_PER_REQUEST)) {
        batches.push(current);
        current = [];
        bytes = 0;
      }
      current.push(op);
      bytes += size;
    }
    if (current.length > 0) batches.push(current);
    return batches;
  }

  /** One request, one transaction: all of the operations or none of them. */
  async applyBatch(operations: readonly Operation[]): Promise<void> {
    // A delete or unlink whose control is already gone (deleted by hand since the plan,
    // for example) has reached its goal: it is left out.
    const origins: Operation[] = [];
    for (const op of operations) if (!(await this.#alreadyGone(op))) origins.push(op);
    // One change per operation, so a refused change's index names its operation.
    const changes = changesOf(origins, this.#actual);
    // A delete or unlink whose control vanished since the plan fails the whole batch
    // (404); its goal is reached, so it is dropped and the batch sent again.
    for (;;) {
      if (changes.length === 0) return;
      this.counter.writes += changes.length;
      try {
        const answer = await this.client.applyChanges(changes, { expectedRevision: this.#revision });
        this.#revision = answer.revision;
        break;
      } catch (error) {
        if (isStale(error)) throw new BatchFailure(null, error);
        const blamed = blamedOperation(error, origins);
        if (blamed && (await this.#vanished(blamed, error))) {
          const at = origins.indexOf(blamed);
          changes.splice(at, 1);
          origins.splice(at, 1);
          continue;
        }
        throw new BatchFailure(blamed, error);
      }
    }
    for (const op of origins) {
      if (op.op === 'create_control') this.#created.add(op.name);
      if (op.op === 'delete_control') {
        this.#created.delete(op.name);
        this.#ids.delete(op.name);
      }
    }
  }

  async #alreadyGone(op: Operation): Promise<boolean> {
    if (op.op === 'delete_control') return !(await this.#exists(op.name));
    if (op.op === 'unlink') return !(await this.#exists(op.control_name));
    return false;
  }

  /** Did `op` fail only because its control is already gone (the goal of a delete or unlink)? */
  async #vanished(op: Operation, error: unknown): Promise<boolean> {
    if (!(error instanceof ApiError && error.status === 404)) return false;
    if (op.op !== 'delete_control' && op.op !== 'unlink') return false;
    const name = op.op === 'delete_control' ? op.name : op.control_name;
    this.#ids.delete(name);
    this.#created.delete(name);
    return !(await this.#exists(name));
  }

  async #exists(name: string): Promise<boolean> {
    return this.#created.has(name) || (await this.#idOf(name, true)) !== null;
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

  /** One request per policy operation (apply sends batches; this is the plain Target's path). */
  async policy(op: PolicyOperation): Promise<void> {
    this.counter.writes++;
    const [have] = (await this.client.policies.list({ name: op.name })).policies;
    if (op.op === 'delete_policy') {
      if (have) await this.client.policies.delete(have.policy_id);
      return;
    }
    const { name, description, controls, agents, source } = op.policy;
    const body = { name, ...(description !== null ? { description } : {}), controls, agents, managed_by: op.managed_by, source };
    if (have) await this.client.policies.replace(have.policy_id, body);
    else await this.client.policies.create(body);
  }

  /** One request per McpServer operation (the plain Target's path; apply sends batches). */
  async mcpServer(op: McpServerOperation): Promise<void> {
    this.counter.writes++;
    if (op.op === 'delete_mcp_server') {
      if (await this.client.mcpServers.get(op.name)) await this.client.mcpServers.delete(op.name);
      return;
    }
    await this.client.mcpServers.put({ ...op.server, managed_by: op.managed_by, source: op.source });
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

function isStale(error: unknown): boolean {
  return error instanceof ApiError && error.problem?.error_code === STALE_REVISION;
}

/** The server names the failing change by its index in the problem's `change_index`. */
function blamedOperation(error: unknown, origins: readonly Operation[]): Operation | null {
  if (!(error instanceof ApiError)) return null;
  const index = error.problem?.change_index;
  return (typeof index === 'number' ? origins[index] : undefined) ?? null;
}

function registrationOf(agentName: string, fields: AgentFields): AgentRegistrationBody {
  const body: AgentRegistrationBody = { agent_name: agentName, conflict_mode: 'overwrite' };
  if (fields.agent_description != null) body.agent_description = fields.agent_description;
  if (fields.agent_version != null) body.agent_version = fields.agent_version;
  if (fields.steps) body.steps = fields.steps;
  if (fields.metadata != null) body.metadata = fields.metadata;
  if (fields.labels !== undefined) body.labels = fields.labels;
  return body;
}
