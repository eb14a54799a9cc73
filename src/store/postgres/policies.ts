/**
 * Policies in PostgreSQL and their resolved membership (policy_members), written in the
 * transaction of the policy or agent write that changes it. Every such write first takes
 * one transaction-scoped advisory lock, so a policy created while an agent registers can
 * never miss it: whichever commits second sees the other's rows.
 */
import { SYSTEM_ORIGIN, type AgentSelector, type Labels, type NewPolicy, type PolicyRecord, type WriteOrigin } from '../../model/index.js';
import { membersOf, policiesLeft, policiesOf, policyRecordOf } from '../policy-records.js';
import { nowIso } from '../records.js';
import type { PolicyPage, PolicyStore } from '../types.js';
import { policyWriteTouches, refusal, writeEntry } from '../write-records.js';
import type { PostgresDatabase, WriteTx } from './database.js';

interface PolicyRow {
  policy_id: string;
  name: string;
  description: string | null;
  agents: AgentSelector;
  managed_by: string | null;
  source: string | null;
  created_at: Date;
  updated_at: Date;
  controls?: string[] | null;
}

/** The columns of a policy with its bound controls' names, in order. */
const WITH_CONTROLS = `p.*, ARRAY(SELECT c.name FROM policy_controls pc JOIN controls c ON c.control_id = pc.control_id
  WHERE pc.policy_id = p.policy_id ORDER BY pc.position) AS controls`;

function recordOf(row: PolicyRow): PolicyRecord {
  return policyRecordOf(row, {
    controls: row.controls ?? [],
    agents: row.agents,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  });
}

type Selectors = Array<{ policy_id: number; agents: AgentSelector }>;

/** How a transaction holds the membership lock: agent writes share it, policy writes hold it alone. */
type MembershipLock = 'shared' | 'exclusive';

export class PostgresPolicies implements PolicyStore {
  /** Selectors parsed once per transaction (an apply registering many agents). */
  private readonly cache = new WeakMap<WriteTx, Selectors>();
  private readonly locked = new WeakMap<WriteTx, MembershipLock>();
  /** Every agent's labels, read once per transaction until an agent of it is written. */
  private readonly agentCache = new WeakMap<WriteTx, Array<{ agent_name: string; labels: Labels }>>();

  constructor(private readonly database: PostgresDatabase) {}

  /**
   * Serialises the writes that change membership (see the file comment); once per
   * transaction. A write of one agent takes the lock shared: agents registering together
   * touch only their own rows, so they need not wait for each other (a fleet starting at
   * once), only for a policy write, which takes it exclusive and so sees all of them.
   */
  async lockMembershipTx(tx: WriteTx, mode: MembershipLock = 'exclusive'): Promise<void> {
    const held = this.locked.get(tx);
    if (held === 'exclusive' || held === mode) return;
    const fn = mode === 'shared' ? 'pg_advisory_xact_lock_shared' : 'pg_advisory_xact_lock';
    await tx.client.query(`SELECT ${fn}(hashtext('guardctl:policies:' || current_schema()))`);
    this.locked.set(tx, mode);
  }

  private async selectorsTx(tx: WriteTx): Promise<Selectors> {
    const cached = this.cache.get(tx);
    if (cached) return cached;
    const rows = await this.database.rows<{ policy_id: string; agents: AgentSelector }>(tx, 'SELECT policy_id, agents FROM policies');
    const selectors = rows.map((r) => ({ policy_id: Number(r.policy_id), agents: r.agents }));
    this.cache.set(tx, selectors);
    return selectors;
  }

  /** Re-resolves which policies select one agent; call (after lockMembershipTx) inside the agent's write. */
  async refreshAgentTx(tx: WriteTx, agentName: string, labels: Labels): Promise<void> {
    this.agentCache.delete(tx);
    const ids = policiesOf(agentName, labels, await this.selectorsTx(tx));
    await tx.client.query('DELETE FROM policy_members WHERE agent_name = $1', [agentName]);
    if (ids.length > 0) {
      await tx.client.query('INSERT INTO policy_members (agent_name, policy_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING', [agentName, ids]);
    }
  }

  /**
   * Refuses a registration whose `labels` take the agent out of a policy selecting it now
   * (409 leaves_policy); call (after lockMembershipTx, so no policy write can commit in
   * between) inside the agent's write.
   */
  async refuseLeavingTx(tx: WriteTx, agentName: string, labels: Labels): Promise<void> {
    const rows = await this.database.rows<{ name: string; agents: AgentSelector }>(
      tx,
      'SELECT p.name, p.agents FROM policy_members m JOIN policies p ON p.policy_id = m.policy_id WHERE m.agent_name = $1',
      [agentName],
    );
    const left = policiesLeft(agentName, labels, rows);
    if (left.length > 0) throw refusal.registrationLeavesPolicies(agentName, left);
  }

  /**
   * Refuses deleting a control some policy binds (409 bound_by_policy). The caller holds the
   * control's row FOR UPDATE: a policy write binding it reads it FOR KEY SHARE
   * (bindControlsTx), so that write either committed before this read (and is seen) or
   * waits and then finds the control gone.
   */
  async refuseBoundDeleteTx(tx: WriteTx, controlId: number | string, controlName: string): Promise<void> {
    const rows = await this.database.rows<{ name: string }>(
      tx,
      'SELECT p.name FROM policy_controls pc JOIN policies p ON p.policy_id = pc.policy_id WHERE pc.control_id = $1 ORDER BY p.name',
      [controlId],
    );
    if (rows.length > 0) throw refusal.controlBoundByPolicy(controlName, rows.map((r) => r.name));
  }

  private async refreshPolicyTx(tx: WriteTx, policyId: number, selector: AgentSelector): Promise<string[]> {
    await tx.client.query('DELETE FROM policy_members WHERE policy_id = $1', [policyId]);
    let agents = this.agentCache.get(tx);
    if (!agents) {
      agents = await this.database.rows<{ agent_name: string; labels: Labels }>(tx, 'SELECT agent_name, labels FROM agents');
      this.agentCache.set(tx, agents);
    }
    const members = membersOf(selector, agents);
    if (members.length > 0) {
      await tx.client.query('INSERT INTO policy_members (agent_name, policy_id) SELECT unnest($1::text[]), $2', [members, policyId]);
    }
    return members;
  }

  private async bindControlsTx(tx: WriteTx, policyId: number, names: readonly string[]): Promise<void> {
    await tx.client.query('DELETE FROM policy_controls WHERE policy_id = $1', [policyId]);
    // FOR KEY SHARE: a control being deleted now is waited for, then seen as gone (not
    // bound to a control the delete did not know a policy binds).
    const found = await this.database.rows<{ name: string; control_id: string }>(
      tx,
      'SELECT name, control_id FROM controls WHERE name = ANY($1::text[]) FOR KEY SHARE',
      [names],
    );
    const ids = new Map(found.map((r) => [r.name, r.control_id]));
    const missing = names.find((n) => !ids.has(n));
    if (missing !== undefined) throw refusal.namedControlNotFound(missing);
    const unique = [...new Set(names)];
    await tx.client.query(
      'INSERT INTO policy_controls (policy_id, position, control_id) SELECT $1, n - 1, id FROM unnest($2::bigint[]) WITH ORDINALITY AS t(id, n)',
      [policyId, unique.map((n) => ids.get(n))],
    );
  }

  private async rowTx(tx: WriteTx, where: string, value: unknown): Promise<PolicyRow | undefined> {
    const [row] = await this.database.rows<PolicyRow>(tx, `SELECT ${WITH_CONTROLS} FROM policies p WHERE ${where} FOR UPDATE`, [value]);
    return row;
  }

  /** Creates the policy, or replaces the one of that name; returns the agents whose set changed. */
  async upsertPolicyTx(tx: WriteTx, policy: NewPolicy): Promise<{ policy: PolicyRecord; touched_agents: string[] }> {
    await this.lockMembershipTx(tx);
    const existing = await this.rowTx(tx, 'p.name = $1', policy.name);
    return existing ? this.replaceTx(tx, existing, policy) : this.createTx(tx, policy);
  }

  private async writeTx(tx: WriteTx, policyId: number, policy: NewPolicy, before: PolicyRow | null): Promise<{ policy: PolicyRecord; touched_agents: string[] }> {
    this.cache.delete(tx);
    await this.bindControlsTx(tx, policyId, policy.controls);
    const membersBefore = before
      ? (await this.database.rows<{ agent_name: string }>(tx, 'SELECT agent_name FROM policy_members WHERE policy_id = $1', [policyId])).map((r) => r.agent_name)
      : [];
    const members = await this.refreshPolicyTx(tx, policyId, policy.agents);
    const [row] = await this.database.rows<PolicyRow>(tx, `SELECT ${WITH_CONTROLS} FROM policies p WHERE p.policy_id = $1`, [policyId]);
    const record = recordOf(row!);
    const touched = policyWriteTouches(membersBefore, members);
    tx.changed = true;
    for (const agent of touched) tx.agents.add(agent);
    tx.entries.push(writeEntry.policyWritten(before ? recordOf(before) : null, record, members.length));
    return { policy: record, touched_agents: touched };
  }

  private async createTx(tx: WriteTx, policy: NewPolicy): Promise<{ policy: PolicyRecord; touched_agents: string[] }> {
    const now = nowIso();
    const [row] = await this.database.rows<{ policy_id: string }>(
      tx,
      `INSERT INTO policies (name, description, agents, managed_by, source, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (name) DO NOTHING RETURNING policy_id`,
      [policy.name, policy.description ?? null, JSON.stringify(policy.agents), policy.managed_by ?? null, policy.source ?? null, now],
    );
    if (!row) throw refusal.policyNameTaken(policy.name);
    return this.writeTx(tx, Number(row.policy_id), policy, null);
  }

  private async replaceTx(tx: WriteTx, current: PolicyRow, policy: NewPolicy): Promise<{ policy: PolicyRecord; touched_agents: string[] }> {
    if (policy.name !== current.name) {
      const taken = await this.database.rows(tx, 'SELECT 1 FROM policies WHERE name = $1', [policy.name]);
      if (taken.length > 0) throw refusal.policyNameTaken(policy.name);
    }
    await this.database.rows(
      tx,
      `UPDATE policies SET name = $2, description = $3, agents = $4, managed_by = $5, source = $6, updated_at = $7 WHERE policy_id = $1`,
      [current.policy_id, policy.name, policy.description ?? null, JSON.stringify(policy.agents), policy.managed_by ?? null, policy.source ?? null, nowIso()],
    );
    return this.writeTx(tx, Number(current.policy_id), policy, current);
  }

  async deleteTx(tx: WriteTx, row: PolicyRow): Promise<string[]> {
    await this.lockMembershipTx(tx);
    const members = (await this.database.rows<{ agent_name: string }>(tx, 'SELECT agent_name FROM policy_members WHERE policy_id = $1', [row.policy_id])).map(
      (r) => r.agent_name,
    );
    await tx.client.query('DELETE FROM policies WHERE policy_id = $1', [row.policy_id]);
    this.cache.delete(tx);
    tx.changed = true;
    for (const agent of members) tx.agents.add(agent);
    tx.entries.push(writeEntry.policyDeleted(recordOf(row), members.length));
    return members;
  }

  async deleteByNameTx(tx: WriteTx, name: string): Promise<string[]> {
    const row = await this.rowTx(tx, 'p.name = $1', name);
    if (!row) throw refusal.namedPolicyNotFound(name);
    return this.deleteTx(tx, row);
  }

  private async existingTx(tx: WriteTx, id: number): Promise<PolicyRow> {
    const row = await this.rowTx(tx, 'p.policy_id = $1', id);
    if (!row) throw refusal.policyNotFound(id);
    return row;
  }

  async createPolicy(policy: NewPolicy, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<PolicyRecord> {
    return this.database.write(async (tx) => {
      await this.lockMembershipTx(tx);
      return (await this.createTx(tx, policy)).policy;
    }, origin);
  }

  async getPolicy(id: number): Promise<PolicyRecord | null> {
    const [row] = await this.database.query<PolicyRow>(`SELECT ${WITH_CONTROLS} FROM policies p WHERE p.policy_id = $1`, [id]);
    return row ? recordOf(row) : null;
  }

  async getPolicyByName(name: string): Promise<PolicyRecord | null> {
    const [row] = await this.database.query<PolicyRow>(`SELECT ${WITH_CONTROLS} FROM policies p WHERE p.name = $1`, [name]);
    return row ? recordOf(row) : null;
  }

  async listPolicies(page: { cursor?: number | undefined; limit: number }): Promise<PolicyPage> {
    const limit = Math.max(1, Math.floor(page.limit));
    const rows = await this.database.query<PolicyRow & { total: string }>(
      `SELECT ${WITH_CONTROLS}, (SELECT count(*) FROM policies) AS total FROM policies p WHERE p.policy_id > $1 ORDER BY p.policy_id LIMIT $2`,
      [page.cursor ?? 0, limit + 1],
    );
    const has_more = rows.length > limit;
    const policies = rows.slice(0, limit).map(recordOf);
    const total = rows[0] ? Number(rows[0].total) : Number((await this.database.query<{ n: string }>('SELECT count(*) AS n FROM policies'))[0]?.n ?? 0);
    return { policies, has_more, next_cursor: has_more ? (policies.at(-1)?.policy_id ?? null) : null, total };
  }

  async listAllPolicies(): Promise<PolicyRecord[]> {
    return (await this.database.query<PolicyRow>(`SELECT ${WITH_CONTROLS} FROM policies p ORDER BY p.policy_id`)).map(recordOf);
  }

  async replacePolicy(id: number, policy: NewPolicy, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<{ policy: PolicyRecord; touched_agents: string[] }> {
    return this.database.write(async (tx) => {
      await this.lockMembershipTx(tx);
      return this.replaceTx(tx, await this.existingTx(tx, id), policy);
    }, origin);
  }

  async deletePolicy(id: number, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<{ touched_agents: string[] }> {
    return this.database.write(async (tx) => {
      await this.lockMembershipTx(tx);
      return { touched_agents: await this.deleteTx(tx, await this.existingTx(tx, id)) };
    }, origin);
  }

  async policyMembers(id: number): Promise<string[]> {
    const rows = await this.database.query<{ agent_name: string }>('SELECT agent_name FROM policy_members WHERE policy_id = $1 ORDER BY agent_name', [id]);
    return rows.map((r) => r.agent_name);
  }
}
