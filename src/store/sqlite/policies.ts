/**
 * Policies in SQLite, and the membership table that keeps reads cheap: policy_members
 * holds, for every policy, the registered agents its selector picks. It is rewritten for a
 * policy when the policy is written and for an agent when the agent is created or its
 * labels change, inside that write's transaction, so a set read never matches selectors.
 */
import { SYSTEM_ORIGIN, type AgentSelector, type Labels, type NewPolicy, type PolicyRecord, type WriteOrigin } from '../../model/index.js';
import { membersOf, policiesLeft, policiesOf, policyRecordOf } from '../policy-records.js';
import { nowIso } from '../records.js';
import type { PolicyPage, PolicyStore } from '../types.js';
import { policyWriteTouches, refusal, writeEntry } from '../write-records.js';
import type { SqliteDatabase } from './database.js';
import type { SqliteHistory } from './history.js';

interface PolicyRow {
  policy_id: number;
  name: string;
  description: string | null;
  agents: string;
  managed_by: string | null;
  source: string | null;
  created_at: string;
  updated_at: string;
}

function prepare(db: SqliteDatabase['db']) {
  return {
    bump: db.prepare('UPDATE store_revision SET value = value + 1 WHERE id = 1 RETURNING value').pluck(),
    byId: db.prepare('SELECT * FROM policies WHERE policy_id = ?'),
    byName: db.prepare('SELECT * FROM policies WHERE name = ?'),
    after: db.prepare('SELECT * FROM policies WHERE policy_id > ? ORDER BY policy_id LIMIT ?'),
    all: db.prepare('SELECT * FROM policies ORDER BY policy_id'),
    count: db.prepare('SELECT count(*) FROM policies').pluck(),
    selectors: db.prepare('SELECT policy_id, agents FROM policies'),
    insert: db.prepare(
      `INSERT INTO policies (name, description, agents, managed_by, source, created_at, updated_at)
       VALUES (@name, @description, @agents, @managed_by, @source, @now, @now) RETURNING *`,
    ),
    update: db.prepare(
      `UPDATE policies SET name = @name, description = @description, agents = @agents, managed_by = @managed_by,
       source = @source, updated_at = @now WHERE policy_id = @policy_id RETURNING *`,
    ),
    delete: db.prepare('DELETE FROM policies WHERE policy_id = ?'),
    controlId: db.prepare('SELECT control_id FROM controls WHERE name = ?').pluck(),
    clearControls: db.prepare('DELETE FROM policy_controls WHERE policy_id = ?'),
    bindControl: db.prepare('INSERT OR IGNORE INTO policy_controls (policy_id, position, control_id) VALUES (?, ?, ?)'),
    controlNames: db.prepare(
      `SELECT c.name FROM policy_controls pc JOIN controls c ON c.control_id = pc.control_id
       WHERE pc.policy_id = ? ORDER BY pc.position`,
    ).pluck(),
    allControlNames: db.prepare(
      `SELECT pc.policy_id, c.name FROM policy_controls pc JOIN controls c ON c.control_id = pc.control_id
       ORDER BY pc.policy_id, pc.position`,
    ),
    members: db.prepare('SELECT agent_name FROM policy_members WHERE policy_id = ? ORDER BY agent_name').pluck(),
    clearMembers: db.prepare('DELETE FROM policy_members WHERE policy_id = ?'),
    addMember: db.prepare('INSERT OR IGNORE INTO policy_members (agent_name, policy_id) VALUES (?, ?)'),
    clearAgent: db.prepare('DELETE FROM policy_members WHERE agent_name = ?'),
    agentLabels: db.prepare('SELECT agent_name, labels FROM agents'),
    // The policies that bind a control: deleting it is refused while any does.
    binding: db.prepare(
      'SELECT p.name FROM policy_controls pc JOIN policies p ON p.policy_id = pc.policy_id WHERE pc.control_id = ? ORDER BY p.name',
    ).pluck(),
    selecting: db.prepare('SELECT p.name, p.agents FROM policy_members m JOIN policies p ON p.policy_id = m.policy_id WHERE m.agent_name = ?'),
  };
}

export class SqlitePolicies implements PolicyStore {
  private readonly s: ReturnType<typeof prepare>;
  /**
   * The parsed selectors, kept for the length of one write transaction (an apply that
   * registers thousands of agents parses them once); null outside one.
   */
  private selectorCache: Array<{ policy_id: number; agents: AgentSelector }> | null = null;
  /** Likewise every agent's parsed labels (an apply writing 200 policies over 10,000 agents reads them once). */
  private agentCache: Array<{ agent_name: string; labels: Labels }> | null = null;
  private caching = false;

  constructor(
    private readonly database: SqliteDatabase,
    private readonly history: SqliteHistory,
  ) {
    this.s = prepare(database.db);
  }

  /** Runs `fn` (inside a transaction) with the selectors parsed at most once. */
  withSelectorCache<T>(fn: () => T): T {
    this.caching = true;
    try {
      return fn();
    } finally {
      this.caching = false;
      this.selectorCache = null;
      this.agentCache = null;
    }
  }

  private recordOf(row: PolicyRow, controls?: string[]): PolicyRecord {
    return policyRecordOf(row, {
      controls: controls ?? (this.s.controlNames.all(row.policy_id) as string[]),
      agents: JSON.parse(row.agents) as AgentSelector,
      created_at: row.created_at,
      updated_at: row.updated_at,
    });
  }

  private selectors(): Array<{ policy_id: number; agents: AgentSelector }> {
    if (this.selectorCache) return this.selectorCache;
    const rows = this.s.selectors.all() as Array<{ policy_id: number; agents: string }>;
    const parsed = rows.map((r) => ({ policy_id: r.policy_id, agents: JSON.parse(r.agents) as AgentSelector }));
    if (this.caching) this.selectorCache = parsed;
    return parsed;
  }

  /** Re-resolves which policies select one agent; call inside the agent's write. */
  refreshAgentTx(agentName: string, labels: Labels): void {
    this.agentCache = null;
    this.s.clearAgent.run(agentName);
    for (const id of policiesOf(agentName, labels, this.selectors())) this.s.addMember.run(agentName, id);
  }

  /** Refuses deleting a control some policy binds (409 bound_by_policy); call inside the delete's write. */
  refuseBoundDeleteTx(controlId: number, controlName: string): void {
    const names = this.s.binding.all(controlId) as string[];
    if (names.length > 0) throw refusal.controlBoundByPolicy(controlName, names);
  }

  /** Refuses a registration whose `labels` take the agent out of a policy selecting it now (409 leaves_policy); call inside the agent's write. */
  refuseLeavingTx(agentName: string, labels: Labels): void {
    const rows = this.s.selecting.all(agentName) as Array<{ name: string; agents: string }>;
    const left = policiesLeft(agentName, labels, rows.map((r) => ({ name: r.name, agents: JSON.parse(r.agents) as AgentSelector })));
    if (left.length > 0) throw refusal.registrationLeavesPolicies(agentName, left);
  }

  private refreshPolicyTx(policyId: number, selector: AgentSelector): string[] {
    this.s.clearMembers.run(policyId);
    const agents =
      this.agentCache ??
      (this.s.agentLabels.all() as Array<{ agent_name: string; labels: string }>).map((a) => ({ agent_name: a.agent_name, labels: JSON.parse(a.labels) as Labels }));
    if (this.caching) this.agentCache = agents;
    const members = membersOf(selector, agents);
    for (const name of members) this.s.addMember.run(name, policyId);
    return members;
  }

  private bindControlsTx(policyId: number, names: readonly string[]): void {
    this.s.clearControls.run(policyId);
    names.forEach((name, position) => {
      const id = this.s.controlId.get(name) as number | undefined;
      if (id === undefined) throw refusal.namedControlNotFound(name);
      this.s.bindControl.run(policyId, position, id);
    });
  }

  private values(policy: NewPolicy) {
    return {
      name: policy.name,
      description: policy.description ?? null,
      agents: JSON.stringify(policy.agents),
      managed_by: policy.managed_by ?? null,
      source: policy.source ?? null,
      now: nowIso(),
    };
  }

  private record(origin: WriteOrigin, entry: Parameters<SqliteHistory['record']>[2]): void {
    this.history.record(this.s.bump.get() as number, origin, entry);
  }

  /** Creates the policy, or replaces the one of that name; returns the agents whose set changed. */
  upsertPolicyTx(policy: NewPolicy, origin: WriteOrigin): { policy: PolicyRecord; touched_agents: string[] } {
    const existing = this.s.byName.get(policy.name) as PolicyRow | undefined;
    return existing ? this.replaceTx(existing, policy, origin) : this.createTx(policy, origin);
  }

  private createTx(policy: NewPolicy, origin: WriteOrigin): { policy: PolicyRecord; touched_agents: string[] } {
    if (this.s.byName.get(policy.name) !== undefined) throw refusal.policyNameTaken(policy.name);
    const row = this.s.insert.get(this.values(policy)) as PolicyRow;
    this.selectorCache = null;
    this.bindControlsTx(row.policy_id, policy.controls);
    const members = this.refreshPolicyTx(row.policy_id, policy.agents);
    const record = this.recordOf(row);
    this.record(origin, () => writeEntry.policyWritten(null, record, members.length));
    return { policy: record, touched_agents: members };
  }

  private replaceTx(current: PolicyRow, policy: NewPolicy, origin: WriteOrigin): { policy: PolicyRecord; touched_agents: string[] } {
    if (policy.name !== current.name && this.s.byName.get(policy.name) !== undefined) throw refusal.policyNameTaken(policy.name);
    const before = this.recordOf(current);
    const membersBefore = this.s.members.all(current.policy_id) as string[];
    const row = this.s.update.get({ ...this.values(policy), policy_id: current.policy_id }) as PolicyRow;
    this.selectorCache = null;
    this.bindControlsTx(row.policy_id, policy.controls);
    const members = this.refreshPolicyTx(row.policy_id, policy.agents);
    const record = this.recordOf(row);
    this.record(origin, () => writeEntry.policyWritten(before, record, members.length));
    return { policy: record, touched_agents: policyWriteTouches(membersBefore, members) };
  }

  deleteByNameTx(name: string, origin: WriteOrigin): string[] {
    const row = this.s.byName.get(name) as PolicyRow | undefined;
    if (!row) throw refusal.namedPolicyNotFound(name);
    return this.deleteTx(row, origin);
  }

  private deleteTx(row: PolicyRow, origin: WriteOrigin): string[] {
    const before = this.recordOf(row);
    const members = this.s.members.all(row.policy_id) as string[];
    this.s.delete.run(row.policy_id);
    this.selectorCache = null;
    this.record(origin, () => writeEntry.policyDeleted(before, members.length));
    return members;
  }

  private rowById(id: number): PolicyRow {
    const row = this.s.byId.get(id) as PolicyRow | undefined;
    if (!row) throw refusal.policyNotFound(id);
    return row;
  }

  async createPolicy(policy: NewPolicy, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<PolicyRecord> {
    return this.database.write(() => this.createTx(policy, origin).policy);
  }

  async getPolicy(id: number): Promise<PolicyRecord | null> {
    return this.database.read(() => {
      const row = this.s.byId.get(id) as PolicyRow | undefined;
      return row ? this.recordOf(row) : null;
    });
  }

  async getPolicyByName(name: string): Promise<PolicyRecord | null> {
    return this.database.read(() => {
      const row = this.s.byName.get(name) as PolicyRow | undefined;
      return row ? this.recordOf(row) : null;
    });
  }

  async listPolicies(page: { cursor?: number | undefined; limit: number }): Promise<PolicyPage> {
    return this.database.read(() => {
      const limit = Math.max(1, Math.floor(page.limit));
      const rows = this.s.after.all(page.cursor ?? 0, limit + 1) as PolicyRow[];
      const has_more = rows.length > limit;
      const policies = rows.slice(0, limit).map((r) => this.recordOf(r));
      return { policies, has_more, next_cursor: has_more ? (policies.at(-1)?.policy_id ?? null) : null, total: this.s.count.get() as number };
    });
  }

  async listAllPolicies(): Promise<PolicyRecord[]> {
    return this.database.read(() => {
      const names = new Map<number, string[]>();
      for (const r of this.s.allControlNames.all() as Array<{ policy_id: number; name: string }>) {
        const list = names.get(r.policy_id) ?? [];
        list.push(r.name);
        names.set(r.policy_id, list);
      }
      return (this.s.all.all() as PolicyRow[]).map((row) => this.recordOf(row, names.get(row.policy_id) ?? []));
    });
  }

  async replacePolicy(id: number, policy: NewPolicy, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<{ policy: PolicyRecord; touched_agents: string[] }> {
    return this.database.write(() => this.replaceTx(this.rowById(id), policy, origin));
  }

  async deletePolicy(id: number, origin: WriteOrigin = SYSTEM_ORIGIN): Promise<{ touched_agents: string[] }> {
    return this.database.write(() => ({ touched_agents: this.deleteTx(this.rowById(id), origin) }));
  }

  async policyMembers(id: number): Promise<string[]> {
    return this.database.read(() => this.s.members.all(id) as string[]);
  }
}
