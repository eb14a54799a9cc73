/**
 * Controls, agents, links and the store revision in SQLite. Every statement is prepared
 * once; every write runs in one IMMEDIATE transaction and bumps the revision.
 */
import { SYSTEM_ORIGIN, type AgentPatch, type AgentRecord, type ControlData, type ControlRecord, type WriteOrigin } from '../../model/index.js';
import { applyChangesSync } from '../apply-changes.js';
import { planRestore } from '../history.js';
import type { NewChangeEntry, RestoreOutcome } from '../history.js';
import { unionOfBindings, sameLabels } from '../policy-records.js';
import { enabledAfter, nowIso, storedDataOf } from '../records.js';
import { staleRevision, type AgentControlSet, type AppliedBatch, type ApplyChangesOptions, type ControlPage, type ControlStore, type Link } from '../types.js';
import type { ControlPatch, NewAgent, NewControl, StoreChange, UpsertAgentOptions } from '../types.js';
import { nameTakenRestore, refusal, unchangedRestore, writeEntry } from '../write-records.js';
import { agentOf, controlOf, type AgentRow, type ControlRow } from './control-rows.js';
import { mapSqliteError, type SqliteDatabase } from './database.js';
import type { SqliteHistory } from './history.js';
import type { SqlitePolicies } from './policies.js';
import type { SqliteMcpServers } from './mcp-servers.js';

function prepare(db: SqliteDatabase['db']) {
  return {
    bump: db.prepare('UPDATE store_revision SET value = value + 1 WHERE id = 1 RETURNING value').pluck(),
    revision: db.prepare('SELECT value FROM store_revision WHERE id = 1').pluck(),
    insertControl: db.prepare(
      `INSERT INTO controls (name, enabled, data, managed_by, source, created_at, updated_at)
       VALUES (@name, @enabled, @data, @managed_by, @source, @now, @now) RETURNING *`,
    ),
    // A restore of a deleted control brings it back under its own id.
    insertControlWithId: db.prepare(
      `INSERT INTO controls (control_id, name, enabled, data, managed_by, source, created_at, updated_at)
       VALUES (@control_id, @name, @enabled, @data, @managed_by, @source, @now, @now) RETURNING *`,
    ),
    controlById: db.prepare('SELECT * FROM controls WHERE control_id = ?'),
    controlByName: db.prepare('SELECT * FROM controls WHERE name = ?'),
    controlsAfter: db.prepare('SELECT * FROM controls WHERE control_id > ? ORDER BY control_id LIMIT ?'),
    allControls: db.prepare('SELECT * FROM controls ORDER BY control_id'),
    countControls: db.prepare('SELECT count(*) FROM controls').pluck(),
    updateControl: db.prepare(
      `UPDATE controls SET name = @name, enabled = @enabled, data = @data, managed_by = @managed_by,
       source = @source, updated_at = @now WHERE control_id = @control_id RETURNING *`,
    ),
    deleteControl: db.prepare('DELETE FROM controls WHERE control_id = ?'),
    agent: db.prepare('SELECT * FROM agents WHERE agent_name = ?'),
    allAgents: db.prepare('SELECT * FROM agents ORDER BY agent_name'),
    insertAgent: db.prepare(
      `INSERT INTO agents (agent_name, agent_description, agent_version, steps, metadata, labels, managed_by, created_at, updated_at)
       VALUES (@agent_name, @agent_description, @agent_version, @steps, @metadata, @labels, @managed_by, @now, @now) RETURNING *`,
    ),
    updateAgent: db.prepare(
      `UPDATE agents SET agent_description = @agent_description, agent_version = @agent_version, steps = @steps,
       metadata = @metadata, labels = @labels, managed_by = @managed_by, updated_at = @now WHERE agent_name = @agent_name RETURNING *`,
    ),
    // Its links go with it (control_links: ON DELETE CASCADE).
    deleteAgent: db.prepare('DELETE FROM agents WHERE agent_name = ?'),
    link: db.prepare('INSERT OR IGNORE INTO control_links (agent_name, control_id) VALUES (?, ?)'),
    unlink: db.prepare('DELETE FROM control_links WHERE agent_name = ? AND control_id = ?'),
    agentControls: db.prepare(
      `SELECT c.* FROM control_links l JOIN controls c ON c.control_id = l.control_id
       WHERE l.agent_name = ? ORDER BY c.control_id`,
    ),
    agentsOfControl: db.prepare('SELECT agent_name FROM control_links WHERE control_id = ? ORDER BY agent_name').pluck(),
    // Linked or selected by a policy that binds the control: the agents its writes touch.
    guardedBy: db.prepare(
      `SELECT agent_name FROM control_links WHERE control_id = ?
       UNION SELECT m.agent_name FROM policy_controls pc JOIN policy_members m ON m.policy_id = pc.policy_id WHERE pc.control_id = ?
       ORDER BY agent_name`,
    ).pluck(),
    // The union of an agent's links and its policies' controls, with where each came from.
    boundControls: db.prepare(
      `SELECT c.*, 'link' AS via FROM control_links l JOIN controls c ON c.control_id = l.control_id WHERE l.agent_name = @agent
       UNION ALL
       SELECT c.*, 'policy:' || p.name AS via FROM policy_members m JOIN policies p ON p.policy_id = m.policy_id
         JOIN policy_controls pc ON pc.policy_id = m.policy_id JOIN controls c ON c.control_id = pc.control_id
       WHERE m.agent_name = @agent
       ORDER BY control_id`,
    ),
    allLinks: db.prepare('SELECT agent_name, control_id FROM control_links ORDER BY agent_name, control_id'),
  };
}

export class SqliteControls implements ControlStore {
  private readonly s: ReturnType<typeof prepare>;

  constructor(
    private readonly database: SqliteDatabase,
    private readonly history: SqliteHistory,
    private readonly policies: SqlitePolicies,
    private readonly mcpServers: SqliteMcpServers,
  ) {
    this.s = prepare(database.db);
  }

  /**
   * Bumps the revision and stores the write's history entry under it (inside the open
   * transaction). The entry is built only when history is kept.
   */
  private bumpWith(origin: WriteOrigin, entry: () => NewChangeEntry): void {
    this.history.record(this.s.bump.get() as number, origin, entry);
  }

  private controlRow(id: number): ControlRow {
    const row = this.s.controlById.get(id) as ControlRow | undefined;
    if (!row) throw refusal.controlNotFound(id);
    return row;
  }

  private controlRowByName(name: string): ControlRow {
    const row = this.s.controlByName.get(name) as ControlRow | undefined;
    if (!row) throw refusal.namedControlNotFound(name);
    return row;
  }

  private agentsOf(controlId: number): string[] {
    return this.s.agentsOfControl.all(controlId) as string[];
  }

  private guardedBy(controlId: number): string[] {
    return this.s.guardedBy.all(controlId, controlId) as string[];
  }

  // The *Tx methods run inside a transaction the caller opened; applyChanges reuses them.

  private createControlTx(control: NewControl, origin: WriteOrigin): ControlRecord {
    if (this.s.controlByName.get(control.name) !== undefined) throw refusal.controlNameTaken(control.name);
    const row = this.s.insertControl.get({
      name: control.name,
      enabled: (control.data?.enabled ?? true) ? 1 : 0,
      data: storedDataOf(control.data),
      managed_by: control.managed_by ?? null,
      source: control.source ?? null,
      now: nowIso(),
    }) as ControlRow;
    const record = controlOf(row);
    this.bumpWith(origin, () => writeEntry.controlCreated(record));
    return record;
  }

  private updateControlTx(current: ControlRow, patch: ControlPatch, origin: WriteOrigin): ControlRecord {
    if (patch.name !== undefined && patch.name !== current.name) {
      if (this.s.controlByName.get(patch.name) !== undefined) throw refusal.controlNameTaken(patch.name);
    }
    const enabled = enabledAfter(current.enabled === 1, patch);
    let data = current.data;
    if (patch.data !== undefined) data = storedDataOf(patch.data);
    const row = this.s.updateControl.get({
      control_id: current.control_id,
      name: patch.name ?? current.name,
      enabled: enabled ? 1 : 0,
      data,
      managed_by: patch.managed_by !== undefined ? patch.managed_by : current.managed_by,
      source: patch.source !== undefined ? patch.source : current.source,
      now: nowIso(),
    }) as ControlRow;
    const record = controlOf(row);
    this.bumpWith(origin, () => writeEntry.controlUpdated(controlOf(current), record));
    return record;
  }

  private deleteControlTx(current: ControlRow, origin: WriteOrigin): string[] {
    this.policies.refuseBoundDeleteTx(current.control_id, current.name);
    const agents = this.agentsOf(current.control_id);
    this.s.deleteControl.run(current.control_id);
    this.bumpWith(origin, () => writeEntry.controlDeleted(controlOf(current), agents));
    return agents;
  }

  private upsertAgentTx(agent: NewAgent, origin: WriteOrigin, options: UpsertAgentOptions = {}): { agent: AgentRecord; created: boolean } {
    const existing = this.s.agent.get(agent.agent_name) as AgentRow | undefined;
    const labels = agent.labels ?? (options.registration && existing ? agentOf(existing).labels : undefined) ?? {};
    if (existing && options.registration) this.policies.refuseLeavingTx(agent.agent_name, labels);
    const values = {
      agent_name: agent.agent_name,
      agent_description: agent.agent_description ?? null,
      agent_version: agent.agent_version ?? null,
      steps: JSON.stringify(agent.steps ?? []),
      metadata: agent.metadata == null ? null : JSON.stringify(agent.metadata),
      labels: JSON.stringify(labels),
      // A registration that does not say who owns the agent keeps the owner it had.
      managed_by: agent.managed_by !== undefined ? agent.managed_by : (existing?.managed_by ?? null),
      now: nowIso(),
    };
    const row = (existing ? this.s.updateAgent.get(values) : this.s.insertAgent.get(values)) as AgentRow;
    const record = agentOf(row);
    // Membership changes only when the agent is new or its labels moved (names never change).
    if (!existing || !sameLabels(agentOf(existing).labels, record.labels)) this.policies.refreshAgentTx(record.agent_name, record.labels);
    this.bumpWith(origin, () => writeEntry.agentWritten(existing ? agentOf(existing) : null, record));
    return { agent: record, created: !existing };
  }

  private linkTx(agentName: string, control: ControlRow, origin: WriteOrigin): boolean {
    if (this.s.agent.get(agentName) === undefined) throw refusal.agentNotFound(agentName);
    const changed = this.s.link.run(agentName, control.control_id).changes > 0;
    if (changed) this.bumpWith(origin, () => writeEntry.link('link', agentName, control.control_id, control.name));
    return changed;
  }

  private unlinkTx(agentName: string, control: ControlRow, origin: WriteOrigin): boolean {
    const changed = this.s.unlink.run(agentName, control.control_id).changes > 0;
    if (changed) this.bumpWith(origin, () => writeEntry.link('unlink', agentName, control.control_id, control.name));
    return changed;
  }

  async createControl(control: NewControl, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<ControlRecord> {
    return this.database.write(() => this.createControlTx(control, origin));
  }

  async getControl(id: number): Promise<ControlRecord | null> {
    const row = this.database.read(() => this.s.controlById.get(id) as ControlRow | undefined);
    return row ? controlOf(row) : null;
  }

  async getControlByName(name: string): Promise<ControlRecord | null> {
    const row = this.database.read(() => this.s.controlByName.get(name) as ControlRow | undefined);
    return row ? controlOf(row) : null;
  }

  async listControls(page: { cursor?: number | undefined; limit: number }): Promise<ControlPage> {
    return this.database.read(() => {
      const limit = Math.max(1, Math.floor(page.limit));
      // One row more than asked tells whether another page exists without a second count.
      const rows = this.s.controlsAfter.all(page.cursor ?? 0, limit + 1) as ControlRow[];
      const has_more = rows.length > limit;
      const controls = rows.slice(0, limit).map(controlOf);
      const total = this.s.countControls.get() as number;
      return { controls, has_more, next_cursor: has_more ? (controls.at(-1)?.control_id ?? null) : null, total };
    });
  }

  async listAllControls(): Promise<ControlRecord[]> {
    return this.database.read(() => (this.s.allControls.all() as ControlRow[]).map(controlOf));
  }

  async updateControl(id: number, patch: ControlPatch, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<ControlRecord> {
    return this.database.write(() => this.updateControlTx(this.controlRow(id), patch, origin));
  }

  async deleteControl(id: number, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<{ unlinked_agents: string[] }> {
    return this.database.write(() => ({ unlinked_agents: this.deleteControlTx(this.controlRow(id), origin) }));
  }

  async getAgent(name: string): Promise<AgentRecord | null> {
    const row = this.database.read(() => this.s.agent.get(name) as AgentRow | undefined);
    return row ? agentOf(row) : null;
  }

  async listAgents(): Promise<AgentRecord[]> {
    return this.database.read(() => (this.s.allAgents.all() as AgentRow[]).map(agentOf));
  }

  async upsertAgent(agent: NewAgent, origin: WriteOrigin = SYSTEM_ORIGIN, options: UpsertAgentOptions = {}): Promise<{ agent: AgentRecord; created: boolean }> {
    return this.database.write(() => this.upsertAgentTx(agent, origin, options));
  }

  async patchAgent(name: string, patch: AgentPatch, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<AgentRecord> {
    return this.database.write(() => {
      const current = this.s.agent.get(name) as AgentRow | undefined;
      if (!current) throw refusal.agentNotFound(name);
      const row = this.s.updateAgent.get({
        agent_name: name,
        agent_description: patch.agent_description !== undefined ? patch.agent_description : current.agent_description,
        agent_version: patch.agent_version !== undefined ? patch.agent_version : current.agent_version,
        steps: patch.steps !== undefined ? JSON.stringify(patch.steps) : current.steps,
        metadata:
          patch.metadata !== undefined
            ? patch.metadata === null
              ? null
              : JSON.stringify(patch.metadata)
            : current.metadata,
        labels: patch.labels !== undefined ? JSON.stringify(patch.labels) : current.labels,
        managed_by: current.managed_by,
        now: nowIso(),
      }) as AgentRow;
      const record = agentOf(row);
      if (patch.labels !== undefined) this.policies.refreshAgentTx(name, record.labels);
      this.bumpWith(origin, () => writeEntry.agentWritten(agentOf(current), record));
      return record;
    });
  }

  async deleteAgent(name: string, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<{ unlinked_controls: number[] }> {
    return this.database.write(() => {
      const current = this.s.agent.get(name) as AgentRow | undefined;
      if (!current) throw refusal.agentNotFound(name);
      const controls = this.s.agentControls.all(name) as ControlRow[];
      this.s.deleteAgent.run(name);
      this.bumpWith(origin, () => writeEntry.agentDeleted(agentOf(current), controls));
      return { unlinked_controls: controls.map((c) => c.control_id) };
    });
  }

  async linkControl(agentName: string, controlId: number, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<boolean> {
    return this.database.write(() => {
      // The agent is checked before the control, so an unknown agent is what a bad pair reports.
      if (this.s.agent.get(agentName) === undefined) throw refusal.agentNotFound(agentName);
      return this.linkTx(agentName, this.controlRow(controlId), origin);
    });
  }

  async unlinkControl(agentName: string, controlId: number, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<boolean> {
    return this.database.write(() => {
      // Unlinking a control that does not exist changes nothing, as before.
      const control = this.s.controlById.get(controlId) as ControlRow | undefined;
      return control ? this.unlinkTx(agentName, control, origin) : false;
    });
  }

  async listAgentControls(agentName: string): Promise<ControlRecord[]> {
    return this.database.read(() => (this.s.agentControls.all(agentName) as ControlRow[]).map(controlOf));
  }

  async agentsOfControl(controlId: number): Promise<string[]> {
    return this.database.read(() => this.guardedBy(controlId));
  }

  async listLinks(): Promise<Link[]> {
    return this.database.read(() => this.s.allLinks.all() as Link[]);
  }

  async applyChanges(changes: StoreChange[], origin: WriteOrigin = SYSTEM_ORIGIN, options: ApplyChangesOptions = {}): Promise<AppliedBatch> {
    return this.database.write(() => {
      // Inside the IMMEDIATE transaction: no other writer can commit between check and batch.
      const before = this.s.revision.get() as number;
      if (options.expectedRevision !== undefined && options.expectedRevision !== before) throw staleRevision(options.expectedRevision, before);
      const touched_agents = this.policies.withSelectorCache(() => applyChangesSync(
        changes,
        {
          createControl: (control) => this.createControlTx(control, origin),
          updateControl: (name, patch) => {
            const row = this.controlRowByName(name);
            this.updateControlTx(row, patch, origin);
            return this.guardedBy(row.control_id);
          },
          deleteControl: (name) => this.deleteControlTx(this.controlRowByName(name), origin),
          upsertAgent: (agent) => this.upsertAgentTx(agent, origin),
          link: (agentName, controlName) => this.linkTx(agentName, this.controlRowByName(controlName), origin),
          unlink: (agentName, controlName) => this.unlinkTx(agentName, this.controlRowByName(controlName), origin),
          upsertPolicy: (policy) => this.policies.upsertPolicyTx(policy, origin).touched_agents,
          deletePolicy: (name) => this.policies.deleteByNameTx(name, origin),
          ...this.mcpServers.stepsTx(origin),
        },
        mapSqliteError,
      ));
      return { touched_agents, revision: this.s.revision.get() as number };
    });
  }

  async revision(): Promise<number> {
    return this.database.read(() => this.s.revision.get() as number);
  }

  async agentControlSet(agentName: string): Promise<AgentControlSet | null> {
    // One connection, synchronous reads: nothing can commit between these statements.
    return this.database.read(() => {
      if (this.s.agent.get(agentName) === undefined) return null;
      const rows = this.s.boundControls.all({ agent: agentName }) as Array<ControlRow & { via: string }>;
      const { controls, sources } = unionOfBindings(rows.map((r) => ({ control: controlOf(r), via: r.via })));
      return { controls, sources, revision: this.s.revision.get() as number };
    });
  }

  async restoreControl(controlId: number, revision: number, origin: WriteOrigin): Promise<RestoreOutcome> {
    return this.database.write((): RestoreOutcome => {
      const row = this.s.controlById.get(controlId) as ControlRow | undefined;
      const current = row ? controlOf(row) : null;
      const plan = planRestore(this.history.entriesOf(controlId), current, revision);
      if (!plan.ok) return plan;
      const target = plan.target;
      const unchanged = unchangedRestore(current, target);
      if (unchanged) return unchanged;
      const holder = this.s.controlByName.get(target.name) as ControlRow | undefined;
      const taken = nameTakenRestore(controlId, target, holder?.control_id);
      if (taken) return taken;
      const values = {
        control_id: controlId,
        name: target.name,
        enabled: target.enabled ? 1 : 0,
        data: storedDataOf(target.data as ControlData | null),
        managed_by: target.managed_by,
        source: target.source,
        now: nowIso(),
      };
      const restored = controlOf((row ? this.s.updateControl.get(values) : this.s.insertControlWithId.get(values)) as ControlRow);
      this.bumpWith(origin, () => writeEntry.controlRestored(current, restored, revision));
      return { ok: true, control: restored, changed: true, recreated: row === undefined };
    });
  }
}
