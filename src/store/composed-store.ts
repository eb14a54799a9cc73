/**
 * A Store made of its five concerns: each dialect writes controls, events, recorded steps
 * and approvals, and reads history in their own modules, and its store class hands every call to the
 * right one.
 * The forwarding is written here once, for both dialects.
 */
import type { AgentPatch, NewPolicy, StoredEvent, WriteOrigin } from '../model/index.js';
import type { McpServerStore } from './mcp-server-records.js';
import type { AuditQuery, ChangePageQuery, HistoryLimits, HistoryStore } from './history.js';
import type {
  ApplyChangesOptions,
  ApprovalDecision,
  ApprovalQuery,
  ApprovalRequest,
  ApprovalStore,
  ControlPatch,
  ControlStore,
  EventQuery,
  EventRollup,
  EventStore,
  NewAgent,
  NewControl,
  NewRecordedStep,
  PolicyStore,
  RecordedStepQuery,
  RecordingStore,
  StatsQuery,
  Store,
  StoreChange,
  UpsertAgentOptions,
} from './types.js';

export abstract class ComposedStore implements Store {
  abstract readonly kind: Store['kind'];
  abstract readonly sharing: Store['sharing'];

  protected constructor(
    private readonly controls: ControlStore,
    private readonly policies: PolicyStore,
    private readonly mcpServers: McpServerStore,
    private readonly events: EventStore,
    private readonly recordings: RecordingStore,
    private readonly history: HistoryStore,
    private readonly approvals: ApprovalStore,
  ) {}

  abstract close(): Promise<void>;

  // ---- controls, agents, links ----
  createControl(control: NewControl, origin?: WriteOrigin) {
    return this.controls.createControl(control, origin);
  }
  getControl(id: number) {
    return this.controls.getControl(id);
  }
  getControlByName(name: string) {
    return this.controls.getControlByName(name);
  }
  listControls(page: { cursor?: number | undefined; limit: number }) {
    return this.controls.listControls(page);
  }
  listAllControls() {
    return this.controls.listAllControls();
  }
  updateControl(id: number, patch: ControlPatch, origin?: WriteOrigin) {
    return this.controls.updateControl(id, patch, origin);
  }
  deleteControl(id: number, origin?: WriteOrigin) {
    return this.controls.deleteControl(id, origin);
  }
  getAgent(name: string) {
    return this.controls.getAgent(name);
  }
  listAgents() {
    return this.controls.listAgents();
  }
  upsertAgent(agent: NewAgent, origin?: WriteOrigin, options?: UpsertAgentOptions) {
    return this.controls.upsertAgent(agent, origin, options);
  }
  patchAgent(name: string, patch: AgentPatch, origin?: WriteOrigin) {
    return this.controls.patchAgent(name, patch, origin);
  }
  deleteAgent(name: string, origin?: WriteOrigin) {
    return this.controls.deleteAgent(name, origin);
  }
  linkControl(agentName: string, controlId: number, origin?: WriteOrigin) {
    return this.controls.linkControl(agentName, controlId, origin);
  }
  unlinkControl(agentName: string, controlId: number, origin?: WriteOrigin) {
    return this.controls.unlinkControl(agentName, controlId, origin);
  }
  listAgentControls(agentName: string) {
    return this.controls.listAgentControls(agentName);
  }
  agentsOfControl(controlId: number) {
    return this.controls.agentsOfControl(controlId);
  }
  listLinks() {
    return this.controls.listLinks();
  }
  applyChanges(changes: StoreChange[], origin?: WriteOrigin, options?: ApplyChangesOptions) {
    return this.controls.applyChanges(changes, origin, options);
  }
  revision() {
    return this.controls.revision();
  }
  agentControlSet(agentName: string) {
    return this.controls.agentControlSet(agentName);
  }
  restoreControl(controlId: number, revision: number, origin: WriteOrigin) {
    return this.controls.restoreControl(controlId, revision, origin);
  }

  // ---- pinned MCP servers (written through applyChanges) ----
  getMcpServerByName(name: string) {
    return this.mcpServers.getMcpServerByName(name);
  }
  listMcpServers(page: { cursor?: number | undefined; limit: number }) {
    return this.mcpServers.listMcpServers(page);
  }
  listAllMcpServers() {
    return this.mcpServers.listAllMcpServers();
  }

  // ---- policies ----
  createPolicy(policy: NewPolicy, origin?: WriteOrigin) {
    return this.policies.createPolicy(policy, origin);
  }
  getPolicy(id: number) {
    return this.policies.getPolicy(id);
  }
  getPolicyByName(name: string) {
    return this.policies.getPolicyByName(name);
  }
  listPolicies(page: { cursor?: number | undefined; limit: number }) {
    return this.policies.listPolicies(page);
  }
  listAllPolicies() {
    return this.policies.listAllPolicies();
  }
  replacePolicy(id: number, policy: NewPolicy, origin?: WriteOrigin) {
    return this.policies.replacePolicy(id, policy, origin);
  }
  deletePolicy(id: number, origin?: WriteOrigin) {
    return this.policies.deletePolicy(id, origin);
  }
  policyMembers(id: number) {
    return this.policies.policyMembers(id);
  }

  // ---- history and audit ----
  policyHistory(policyId: number, page: ChangePageQuery) {
    return this.history.policyHistory(policyId, page);
  }
  controlHistory(controlId: number, page: ChangePageQuery) {
    return this.history.controlHistory(controlId, page);
  }
  auditLog(query: AuditQuery) {
    return this.history.auditLog(query);
  }
  pruneHistory(limits: HistoryLimits) {
    return this.history.pruneHistory(limits);
  }

  // ---- events, rollups, stats ----
  insertEvents(events: StoredEvent[]) {
    return this.events.insertEvents(events);
  }
  insertRollups(rollups: EventRollup[]) {
    return this.events.insertRollups(rollups);
  }
  queryEvents(query: EventQuery) {
    return this.events.queryEvents(query);
  }
  controlStats(query: StatsQuery) {
    return this.events.controlStats(query);
  }
  pruneEvents(before: string) {
    return this.events.pruneEvents(before);
  }

  // ---- recorded steps ----
  insertRecordedSteps(steps: NewRecordedStep[]) {
    return this.recordings.insertRecordedSteps(steps);
  }
  queryRecordedSteps(query: RecordedStepQuery) {
    return this.recordings.queryRecordedSteps(query);
  }
  pruneRecordedSteps(before: string) {
    return this.recordings.pruneRecordedSteps(before);
  }

  // ---- approvals ----
  submitApproval(request: ApprovalRequest, now: number) {
    return this.approvals.submitApproval(request, now);
  }
  useApproved(digest: string, actor: string, now: number) {
    return this.approvals.useApproved(digest, actor, now);
  }
  giveBackApproval(id: string, usedAt: number, actor: string, now: number) {
    return this.approvals.giveBackApproval(id, usedAt, actor, now);
  }
  getApproval(id: string, now: number) {
    return this.approvals.getApproval(id, now);
  }
  listApprovals(query: ApprovalQuery, now: number) {
    return this.approvals.listApprovals(query, now);
  }
  decideApproval(id: string, decision: ApprovalDecision, now: number) {
    return this.approvals.decideApproval(id, decision, now);
  }
}
