/**
 * Controls, agents, links and the store revision in PostgreSQL. Writes lock the rows
 * they read (FOR UPDATE) and tell the transaction which agents they touched, so the
 * NOTIFY sent on commit names them.
 */
import { SYSTEM_ORIGIN, type AgentPatch, type AgentRecord, type ControlData, type ControlRecord, type WriteOrigin } from '../../model/index.js';
import { applyChangesAsync } from '../apply-changes.js';
import { planRestore, type RestoreOutcome } from '../history.js';
import { sameLabels, unionOfBindings } from '../policy-records.js';
import { enabledAfter, nowIso, storedDataOf } from '../records.js';
import { staleRevision, type AgentControlSet, type AppliedBatch, type ApplyChangesOptions, type ControlPage, type ControlStore, type Link, type ControlPatch, type NewAgent, type NewControl, type StoreChange, type UpsertAgentOptions } from '../types.js';
import { nameTakenRestore, refusal, unchangedRestore, writeEntry } from '../write-records.js';
import type { PostgresDatabase, WriteTx } from './database.js';
import { AGENT_CONTROL_SET, GUARDED_BY, agentOf, agentsGuardedBy, agentsLinkedTo, controlOf, controlRowByNameForUpdate, controlRowForUpdate, type AgentRow, type ControlRow } from './control-rows.js';
import { mapPgError } from './errors.js';
import type { PostgresHistory } from './history.js';
import type { PostgresPolicies } from './policies.js';
import type { PostgresMcpServers } from './mcp-servers.js';

export class PostgresControls implements ControlStore {
  constructor(
    private readonly database: PostgresDatabase,
    private readonly history: PostgresHistory,
    private readonly policies: PostgresPolicies,
    private readonly mcpServers: PostgresMcpServers,
  ) {}

  private async createControlTx(tx: WriteTx, control: NewControl): Promise<ControlRecord> {
    const now = nowIso();
    // ON CONFLICT DO NOTHING keeps the transaction usable, so a batch can name the failing change.
    const [row] = await this.database.rows<ControlRow>(
      tx,
      `INSERT INTO controls (name, enabled, data, managed_by, source, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (name) DO NOTHING RETURNING *`,
      [control.name, control.data?.enabled ?? true, storedDataOf(control.data), control.managed_by ?? null, control.source ?? null, now],
    );
    if (!row) throw refusal.controlNameTaken(control.name);
    tx.changed = true;
    const record = controlOf(row);
    tx.entries.push(writeEntry.controlCreated(record));
    return record;
  }

  private async updateControlTx(tx: WriteTx, current: ControlRow, patch: ControlPatch): Promise<ControlRecord> {
    if (patch.name !== undefined && patch.name !== current.name) {
      const taken = await this.database.rows(tx, 'SELECT 1 FROM controls WHERE name = $1', [patch.name]);
      if (taken.length > 0) throw refusal.controlNameTaken(patch.name);
    }
    const enabled = enabledAfter(current.enabled, patch);
    const data = patch.data !== undefined ? storedDataOf(patch.data) : current.data === null ? null : JSON.stringify(current.data);
    const [row] = await this.database.rows<ControlRow>(
      tx,
      `UPDATE controls SET name = $2, enabled = $3, data = $4, managed_by = $5, source = $6, updated_at = $7
       WHERE control_id = $1 RETURNING *`,
      [
        current.control_id,
        patch.name ?? current.name,
        enabled,
        data,
        patch.managed_by !== undefined ? patch.managed_by : current.managed_by,
        patch.source !== undefined ? patch.source : current.source,
        nowIso(),
      ],
    );
    tx.changed = true;
    for (const agent of await agentsGuardedBy(this.database, tx, current.control_id)) tx.agents.add(agent);
    const record = controlOf(row!);
    tx.entries.push(writeEntry.controlUpdated(controlOf(current), record));
    return record;
  }

  /** `current` was read FOR UPDATE, which refuseBoundDeleteTx relies on. */
  private async deleteControlTx(tx: WriteTx, current: ControlRow): Promise<string[]> {
    await this.policies.refuseBoundDeleteTx(tx, current.control_id, current.name);
    const agents = await agentsLinkedTo(this.database, tx, current.control_id);
    await tx.client.query('DELETE FROM controls WHERE control_id = $1', [current.control_id]);
    tx.changed = true;
    for (const agent of agents) tx.agents.add(agent);
    tx.entries.push(writeEntry.controlDeleted(controlOf(current), agents));
    return agents;
  }

  private async upsertAgentTx(tx: WriteTx, agent: NewAgent, options: UpsertAgentOptions = {}): Promise<{ agent: AgentRecord; created: boolean }> {
    const now = nowIso();
    // Held to COMMIT: no policy write commits between the leaves_policy check and the write.
    await this.policies.lockMembershipTx(tx, 'shared');
    const [existing] = await this.database.rows<AgentRow>(tx, 'SELECT * FROM agents WHERE agent_name = $1 FOR UPDATE', [agent.agent_name]);
    const labels = agent.labels ?? (options.registration ? existing?.labels : undefined) ?? {};
    if (existing && options.registration) await this.policies.refuseLeavingTx(tx, agent.agent_name, labels);
    // xmax = 0 only for a freshly inserted row: the one-statement way to tell insert from update.
    const [row] = await this.database.rows<AgentRow & { inserted: boolean }>(
      tx,
      `INSERT INTO agents AS a (agent_name, agent_description, agent_version, steps, metadata, managed_by, created_at, updated_at, labels)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $9)
       ON CONFLICT (agent_name) DO UPDATE SET agent_description = EXCLUDED.agent_description,
         agent_version = EXCLUDED.agent_version, steps = EXCLUDED.steps, metadata = EXCLUDED.metadata, labels = EXCLUDED.labels,
         managed_by = CASE WHEN $8 THEN EXCLUDED.managed_by ELSE a.managed_by END, updated_at = EXCLUDED.updated_at
       RETURNING *, (xmax = 0) AS inserted`,
      [
        agent.agent_name,
        agent.agent_description ?? null,
        agent.agent_version ?? null,
        JSON.stringify(agent.steps ?? []),
        agent.metadata == null ? null : JSON.stringify(agent.metadata),
        agent.managed_by ?? null,
        now,
        // A registration that does not say who owns the agent keeps the owner it had.
        agent.managed_by !== undefined,
        JSON.stringify(labels),
      ],
    );
    tx.changed = true;
    tx.agents.add(agent.agent_name);
    const { inserted, ...stored } = row!;
    const record = agentOf(stored);
    // Membership changes only when the agent is new or its labels moved (names never change).
    if (!existing || !sameLabels(existing.labels, record.labels)) await this.policies.refreshAgentTx(tx, record.agent_name, record.labels);
    tx.entries.push(writeEntry.agentWritten(existing ? agentOf(existing) : null, record));
    return { agent: record, created: inserted };
  }

  private async linkTx(tx: WriteTx, agentName: string, controlId: number | string): Promise<boolean> {
    const agent = await this.database.rows(tx, 'SELECT 1 FROM agents WHERE agent_name = $1', [agentName]);
    if (agent.length === 0) throw refusal.agentNotFound(agentName);
    const [control] = await this.database.rows<{ name: string }>(tx, 'SELECT name FROM controls WHERE control_id = $1', [controlId]);
    if (!control) throw refusal.controlNotFound(controlId);
    const result = await tx.client.query(
      'INSERT INTO control_links (agent_name, control_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [agentName, controlId],
    );
    return this.noteLinkChange(tx, 'link', agentName, Number(controlId), control.name, (result.rowCount ?? 0) > 0);
  }

  private async unlinkTx(tx: WriteTx, agentName: string, controlId: number | string): Promise<boolean> {
    const [control] = await this.database.rows<{ name: string }>(tx, 'SELECT name FROM controls WHERE control_id = $1', [controlId]);
    // Unlinking a control that does not exist changes nothing.
    if (!control) return false;
    const result = await tx.client.query('DELETE FROM control_links WHERE agent_name = $1 AND control_id = $2', [
      agentName,
      controlId,
    ]);
    return this.noteLinkChange(tx, 'unlink', agentName, Number(controlId), control.name, (result.rowCount ?? 0) > 0);
  }

  /** A link made or removed changes the revision and the agent's controls, and is a history entry. */
  private noteLinkChange(tx: WriteTx, op: 'link' | 'unlink', agentName: string, controlId: number, controlName: string, changed: boolean): boolean {
    if (changed) {
      tx.changed = true;
      tx.agents.add(agentName);
      tx.entries.push(writeEntry.link(op, agentName, controlId, controlName));
    }
    return changed;
  }

  async createControl(control: NewControl, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<ControlRecord> {
    return this.database.write((tx) => this.createControlTx(tx, control), origin);
  }

  async getControl(id: number): Promise<ControlRecord | null> {
    const [row] = await this.database.query<ControlRow>('SELECT * FROM controls WHERE control_id = $1', [id]);
    return row ? controlOf(row) : null;
  }

  async getControlByName(name: string): Promise<ControlRecord | null> {
    const [row] = await this.database.query<ControlRow>('SELECT * FROM controls WHERE name = $1', [name]);
    return row ? controlOf(row) : null;
  }

  async listControls(page: { cursor?: number | undefined; limit: number }): Promise<ControlPage> {
    const limit = Math.max(1, Math.floor(page.limit));
    const [rows, count] = await Promise.all([
      this.database.query<ControlRow>('SELECT * FROM controls WHERE control_id > $1 ORDER BY control_id LIMIT $2', [
        page.cursor ?? 0,
        limit + 1,
      ]),
      this.database.query<{ total: string }>('SELECT count(*) AS total FROM controls'),
    ]);
    const has_more = rows.length > limit;
    const controls = rows.slice(0, limit).map(controlOf);
    return {
      controls,
      has_more,
      next_cursor: has_more ? (controls.at(-1)?.control_id ?? null) : null,
      total: Number(count[0]?.total ?? 0),
    };
  }

  async listAllControls(): Promise<ControlRecord[]> {
    return (await this.database.query<ControlRow>('SELECT * FROM controls ORDER BY control_id')).map(controlOf);
  }

  async updateControl(id: number, patch: ControlPatch, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<ControlRecord> {
    return this.database.write(async (tx) => this.updateControlTx(tx, await controlRowForUpdate(this.database, tx, id), patch), origin);
  }

  async deleteControl(id: number, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<{ unlinked_agents: string[] }> {
    return this.database.write(async (tx) => ({ unlinked_agents: await this.deleteControlTx(tx, await controlRowForUpdate(this.database, tx, id)) }), origin);
  }

  async getAgent(name: string): Promise<AgentRecord | null> {
    const [row] = await this.database.query<AgentRow>('SELECT * FROM agents WHERE agent_name = $1', [name]);
    return row ? agentOf(row) : null;
  }

  async listAgents(): Promise<AgentRecord[]> {
    return (await this.database.query<AgentRow>('SELECT * FROM agents ORDER BY agent_name')).map(agentOf);
  }

  async upsertAgent(agent: NewAgent, origin: WriteOrigin = SYSTEM_ORIGIN, options: UpsertAgentOptions = {}): Promise<{ agent: AgentRecord; created: boolean }> {
    return this.database.write((tx) => this.upsertAgentTx(tx, agent, options), origin);
  }

  async patchAgent(name: string, patch: AgentPatch, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<AgentRecord> {
    return this.database.write(async (tx) => {
      if (patch.labels !== undefined) await this.policies.lockMembershipTx(tx, 'shared');
      const [current] = await this.database.rows<AgentRow>(tx, 'SELECT * FROM agents WHERE agent_name = $1 FOR UPDATE', [name]);
      if (!current) throw refusal.agentNotFound(name);
      const metadata = patch.metadata !== undefined ? patch.metadata : current.metadata;
      const [row] = await this.database.rows<AgentRow>(
        tx,
        `UPDATE agents SET agent_description = $2, agent_version = $3, steps = $4, metadata = $5, updated_at = $6, labels = $7
         WHERE agent_name = $1 RETURNING *`,
        [
          name,
          patch.agent_description !== undefined ? patch.agent_description : current.agent_description,
          patch.agent_version !== undefined ? patch.agent_version : current.agent_version,
          JSON.stringify(patch.steps ?? current.steps),
          metadata === null ? null : JSON.stringify(metadata),
          nowIso(),
          JSON.stringify(patch.labels ?? current.labels),
        ],
      );
      tx.changed = true;
      tx.agents.add(name);
      const record = agentOf(row!);
      if (patch.labels !== undefined) await this.policies.refreshAgentTx(tx, name, record.labels);
      tx.entries.push(writeEntry.agentWritten(agentOf(current), record));
      return record;
    }, origin);
  }

  async deleteAgent(name: string, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<{ unlinked_controls: number[] }> {
    return this.database.write(async (tx) => {
      const [current] = await this.database.rows<AgentRow>(tx, 'SELECT * FROM agents WHERE agent_name = $1 FOR UPDATE', [name]);
      if (!current) throw refusal.agentNotFound(name);
      const controls = await this.database.rows<{ control_id: string | number; name: string }>(
        tx,
        `SELECT c.control_id, c.name FROM control_links l JOIN controls c ON c.control_id = l.control_id
         WHERE l.agent_name = $1 ORDER BY c.control_id`,
        [name],
      );
      // Its links go with it (control_links: ON DELETE CASCADE).
      await tx.client.query('DELETE FROM agents WHERE agent_name = $1', [name]);
      tx.changed = true;
      tx.agents.add(name);
      tx.entries.push(writeEntry.agentDeleted(agentOf(current), controls));
      return { unlinked_controls: controls.map((c) => Number(c.control_id)) };
    }, origin);
  }

  async linkControl(agentName: string, controlId: number, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<boolean> {
    return this.database.write((tx) => this.linkTx(tx, agentName, controlId), origin);
  }

  async unlinkControl(agentName: string, controlId: number, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<boolean> {
    return this.database.write((tx) => this.unlinkTx(tx, agentName, controlId), origin);
  }

  async listAgentControls(agentName: string): Promise<ControlRecord[]> {
    const rows = await this.database.query<ControlRow>(
      `SELECT c.* FROM control_links l JOIN controls c ON c.control_id = l.control_id
       WHERE l.agent_name = $1 ORDER BY c.control_id`,
      [agentName],
    );
    return rows.map(controlOf);
  }

  async agentsOfControl(controlId: number): Promise<string[]> {
    const rows = await this.database.query<{ agent_name: string }>(GUARDED_BY, [controlId]);
    return rows.map((r) => r.agent_name);
  }

  async listLinks(): Promise<Link[]> {
    const rows = await this.database.query<{ agent_name: string; control_id: string }>(
      'SELECT agent_name, control_id FROM control_links ORDER BY agent_name, control_id',
    );
    return rows.map((r) => ({ agent_name: r.agent_name, control_id: Number(r.control_id) }));
  }

  async applyChanges(changes: StoreChange[], origin: WriteOrigin = SYSTEM_ORIGIN, options: ApplyChangesOptions = {}): Promise<AppliedBatch> {
    let revision = 0;
    let revisionTx: WriteTx | undefined;
    const touched_agents = await this.database.write(async (tx) => {
      // With an expected revision the row is locked until COMMIT: a second apply's check
      // waits for this batch, then sees the revision it produced.
      const lock = options.expectedRevision === undefined ? '' : ' FOR UPDATE';
      const read = await tx.client.query<{ value: string }>(`SELECT value FROM store_revision WHERE id = 1${lock}`);
      revision = Number(read.rows[0]?.value);
      // The write bumps the revision after this function returns, on `tx`.
      revisionTx = tx;
      if (options.expectedRevision !== undefined && options.expectedRevision !== revision) throw staleRevision(options.expectedRevision, revision);
      // Taken before any row lock, so a batch never waits for it while holding one.
      if (changes.some((c) => c.op === 'upsert_agent' || c.op === 'upsert_policy' || c.op === 'delete_policy')) await this.policies.lockMembershipTx(tx);
      const byName = (name: string) => controlRowByNameForUpdate(this.database, tx, name);
      const touched = await applyChangesAsync(
        changes,
        {
          createControl: (control) => this.createControlTx(tx, control),
          updateControl: async (name, patch) => {
            const row = await byName(name);
            await this.updateControlTx(tx, row, patch);
            return agentsGuardedBy(this.database, tx, row.control_id);
          },
          deleteControl: async (name) => this.deleteControlTx(tx, await byName(name)),
          upsertAgent: (agent) => this.upsertAgentTx(tx, agent),
          link: async (agentName, controlName) => this.linkTx(tx, agentName, (await byName(controlName)).control_id),
          unlink: async (agentName, controlName) => this.unlinkTx(tx, agentName, (await byName(controlName)).control_id),
          upsertPolicy: async (policy) => (await this.policies.upsertPolicyTx(tx, policy)).touched_agents,
          deletePolicy: (name) => this.policies.deleteByNameTx(tx, name),
          ...this.mcpServers.stepsTx(tx),
        },
        mapPgError,
      );
      return touched;
    }, origin);
    return { touched_agents, revision: revisionTx?.revision ?? revision };
  }

  async revision(): Promise<number> {
    const [row] = await this.database.query<{ value: string }>('SELECT value FROM store_revision WHERE id = 1');
    return Number(row?.value ?? 0);
  }

  async agentControlSet(agentName: string): Promise<AgentControlSet | null> {
    // One statement, one snapshot: the links, the policies' controls and the revision they are at.
    const rows = await this.database.query<Partial<ControlRow> & { set_revision: string; agent_exists: boolean; via: string | null }>(
      AGENT_CONTROL_SET,
      [agentName],
    );
    const first = rows[0];
    if (!first?.agent_exists) return null;
    const bound = rows.filter((r) => r.control_id !== undefined && r.control_id !== null);
    const { controls, sources } = unionOfBindings(bound.map((r) => ({ control: controlOf(r as ControlRow), via: r.via ?? 'link' })));
    return { controls, sources, revision: Number(first.set_revision) };
  }

  async restoreControl(controlId: number, revision: number, origin: WriteOrigin): Promise<RestoreOutcome> {
    return this.database.write(async (tx): Promise<RestoreOutcome> => {
      const [row] = await this.database.rows<ControlRow>(tx, 'SELECT * FROM controls WHERE control_id = $1 FOR UPDATE', [controlId]);
      const current = row ? controlOf(row) : null;
      const plan = planRestore(await this.history.entriesOf(tx.client, controlId), current, revision);
      if (!plan.ok) return plan;
      const target = plan.target;
      const unchanged = unchangedRestore(current, target);
      if (unchanged) return unchanged;
      const [holder] = await this.database.rows<{ control_id: string }>(tx, 'SELECT control_id FROM controls WHERE name = $1', [target.name]);
      const taken = nameTakenRestore(controlId, target, holder ? Number(holder.control_id) : undefined);
      if (taken) return taken;
      const values = [controlId, target.name, target.enabled, storedDataOf(target.data as ControlData | null), target.managed_by, target.source, nowIso()];
      const [written] = row
        ? await this.database.rows<ControlRow>(
            tx,
            `UPDATE controls SET name = $2, enabled = $3, data = $4, managed_by = $5, source = $6, updated_at = $7
             WHERE control_id = $1 RETURNING *`,
            values,
          )
        : await this.database.rows<ControlRow>(
            tx,
            `INSERT INTO controls (control_id, name, enabled, data, managed_by, source, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING *`,
            values,
          );
      const restored = controlOf(written!);
      tx.changed = true;
      for (const agent of await agentsLinkedTo(this.database, tx, controlId)) tx.agents.add(agent);
      tx.entries.push(writeEntry.controlRestored(current, restored, revision));
      return { ok: true, control: restored, changed: true, recreated: row === undefined };
    }, origin);
  }
}
