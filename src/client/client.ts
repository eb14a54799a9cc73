/**
 * The typed REST client of the guardctl server (SPEC section 4 + PRODUCT.md). It is
 * I/O only: one method per endpoint, every request bounded by a timeout, every answer
 * checked against a schema. It has no state besides its options, so one instance can be
 * shared by the CLI, the SDK and the dashboard.
 */
import type { z } from 'zod';
import {
  ControlRecordSchema,
  type AgentPatch,
  type AgentRecord,
  type ChangeBody,
  type ControlData,
  type ControlDataInput,
  type ControlRecord,
  type EvaluationRequest,
  type EvaluationResult,
  type ObservabilityEvent,
  type Stage,
  type ShadowReport,
  type Step,
  type SessionInfo,
  AgentRecordSchema,
  SessionInfoSchema,
} from '../model/index.js';
import { approvalsApiOf, type ApprovalsApi } from './approvals.js';
import type { AgentRegistrationBody, ControlPatchBody, EventQueryBody, NewControlBody, StatsParams } from './bodies.js';
import { ResponseShapeError } from './errors.js';
import {
  AuditPageSchema,
  ControlHistorySchema,
  RecordingPageSchema,
  RestoreResultSchema,
  ShadowReportSchema,
  type AuditPage,
  type ControlHistory,
  type RecordingPage,
  type RestoreResult,
} from './schemas.js';
import { PolicyClient, type PoliciesApi } from './policies.js';
import { McpServerClient, type McpServersApi } from './mcp-servers.js';
import { Transport, type GuardClientOptions, type RequestSpec } from './transport.js';
import {
  AckSchema,
  AgentControlsSchema,
  AgentStatsSchema,
  AppliedChangesSchema,
  RevisionSchema,
  ControlStatsSchema,
  AgentDetailSchema,
  AgentListSchema,
  ControlDataEnvelopeSchema,
  ControlListSchema,
  CreatedControlSchema,
  DeletedControlSchema,
  EvaluationResultSchema,
  EvaluatorListSchema,
  EventQueryResultSchema,
  HealthSchema,
  IngestResultSchema,
  InitAgentResultSchema,
  LinkResultSchema,
  UnlinkResultSchema,
  DeleteAgentResultSchema,
  ValidateResultSchema,
  type Ack,
  type AgentControls,
  type AgentDetail,
  type AgentStats,
  type AppliedChanges,
  type ControlStatsResult,
  type ControlList,
  type CreatedControl,
  type EvaluatorInfo,
  type EventQueryResult,
  type Health,
  type IngestResult,
  type InitAgentResult,
} from './schemas.js';

export { DEFAULT_TIMEOUT_MS, type GuardClientOptions } from './transport.js';
export type { AgentRegistrationBody, ControlPatchBody, EventQueryBody, NewControlBody, StatsParams } from './bodies.js';

const API = '/api/v1';
const enc = encodeURIComponent;

export class GuardClient {
  readonly serverUrl: string;
  readonly timeoutMs: number;
  readonly #transport: Transport;
  /** Approvals of asked steps: list, get, wait, approve, deny. */
  readonly approvals: ApprovalsApi;
  /** `/policies`: CRUD and history. */
  readonly policies: PoliciesApi;
  readonly mcpServers: McpServersApi;

  constructor(options: GuardClientOptions) {
    this.#transport = new Transport(options);
    this.approvals = approvalsApiOf(this.#transport);
    this.policies = new PolicyClient(this.#transport);
    this.mcpServers = new McpServerClient(this.#transport);
    this.serverUrl = this.#transport.serverUrl;
    this.timeoutMs = this.#transport.timeoutMs;
  }

  #request<S extends z.ZodType>(spec: RequestSpec<S>): Promise<z.infer<S>> {
    return this.#transport.request(spec);
  }

  // ---- system ----

  health(): Promise<Health> {
    return this.#request({ method: 'GET', path: '/health', endpoint: 'GET /health', schema: HealthSchema });
  }

  async listEvaluators(): Promise<EvaluatorInfo[]> {
    const out = await this.#request({
      method: 'GET', path: `${API}/evaluators`, endpoint: 'GET /evaluators', schema: EvaluatorListSchema,
    });
    return out.evaluators;
  }

  // ---- controls ----

  listControls(page: { cursor?: number | null; limit?: number; name?: string } = {}): Promise<ControlList> {
    return this.#request({
      method: 'GET', path: `${API}/controls`, endpoint: 'GET /controls', schema: ControlListSchema,
      query: { cursor: page.cursor ?? undefined, limit: page.limit, name: page.name },
    });
  }

  /** Every control, following `next_cursor` until the last page. */
  async listAllControls(pageSize = 100): Promise<ControlRecord[]> {
    const all: ControlRecord[] = [];
    let cursor: number | null = null;
    for (;;) {
      const page: ControlList = await this.listControls({ cursor, limit: pageSize });
      all.push(...page.controls);
      const next = page.pagination.next_cursor;
      if (!page.pagination.has_more || next === null) return all;
      // A server that hands back the same cursor would loop forever; name it instead.
      if (next === cursor) {
        throw new ResponseShapeError('GET /controls', this.#transport.url(`${API}/controls`), `next_cursor ${next} does not advance`);
      }
      cursor = next;
    }
  }

  getControl(id: number): Promise<ControlRecord> {
    return this.#request({
      method: 'GET', path: `${API}/controls/${id}`, endpoint: 'GET /controls/{control_id}', schema: ControlRecordSchema,
    });
  }

  createControl(control: NewControlBody): Promise<CreatedControl> {
    return this.#request({
      method: 'PUT', path: `${API}/controls`, endpoint: 'PUT /controls', schema: CreatedControlSchema, body: control,
    });
  }

  patchControl(id: number, patch: ControlPatchBody): Promise<Ack> {
    return this.#request({
      method: 'PATCH', path: `${API}/controls/${id}`, endpoint: 'PATCH /controls/{control_id}', schema: AckSchema,
      body: patch,
    });
  }

  async getControlData(id: number): Promise<ControlData> {
    const out = await this.#request({
      method: 'GET', path: `${API}/controls/${id}/data`, endpoint: 'GET /controls/{control_id}/data',
      schema: ControlDataEnvelopeSchema,
    });
    return out.data;
  }

  putControlData(id: number, data: ControlDataInput | ControlData): Promise<Ack> {
    return this.#request({
      method: 'PUT', path: `${API}/controls/${id}/data`, endpoint: 'PUT /controls/{control_id}/data', schema: AckSchema,
      body: { data },
    });
  }

  /** Resolves when the data is valid; a 422 ApiError carries the field issues otherwise. */
  async validateControlData(data: unknown): Promise<{ success: true }> {
    await this.#request({
      method: 'POST', path: `${API}/controls/validate`, endpoint: 'POST /controls/validate',
      schema: ValidateResultSchema, body: { data },
    });
    return { success: true };
  }

  async deleteControl(id: number): Promise<{ deleted: boolean; unlinked_agents: string[] }> {
    const out = await this.#request({
      method: 'DELETE', path: `${API}/controls/${id}`, endpoint: 'DELETE /controls/{control_id}',
      schema: DeletedControlSchema,
    });
    return { deleted: out.deleted ?? true, unlinked_agents: out.unlinked_agents ?? [] };
  }

  /**
   * Applies 1 to 500 changes in one transaction, all of them or none. A refusal is an
   * ApiError whose problem names the failing change (`errors[0].field` = `changes[N]`).
   */
  applyChanges(changes: ChangeBody[], options: { expectedRevision?: number | undefined } = {}): Promise<AppliedChanges> {
    const body = options.expectedRevision === undefined ? { changes } : { changes, expected_revision: options.expectedRevision };
    return this.#request({
      method: 'POST', path: `${API}/changes`, endpoint: 'POST /changes', schema: AppliedChangesSchema, body,
    });
  }

  /** The store revision, which grows with every write to controls, agents or links. */
  async getRevision(): Promise<number> {
    const out = await this.#request({ method: 'GET', path: `${API}/changes/revision`, endpoint: 'GET /changes/revision', schema: RevisionSchema });
    return out.revision;
  }

  // ---- agents ----

  /** Every agent; with `labels` (`key=value`, `key!=value`, `key`), only those matching all of them. */
  async listAgents(labels: readonly string[] = [], include?: 'links'): Promise<Array<AgentRecord & { links?: string[] }>> {
    const query = { ...(labels.length > 0 ? { label: [...labels] } : {}), ...(include ? { include } : {}) };
    const out = await this.#request({ method: 'GET', path: `${API}/agents`, endpoint: 'GET /agents', schema: AgentListSchema, query });
    return out.agents;
  }

  getAgent(name: string): Promise<AgentDetail> {
    return this.#request({
      method: 'GET', path: `${API}/agents/${enc(name)}`, endpoint: 'GET /agents/{agent_name}', schema: AgentDetailSchema,
    });
  }

  initAgent(registration: AgentRegistrationBody): Promise<InitAgentResult> {
    return this.#request({
      method: 'POST', path: `${API}/agents/initAgent`, endpoint: 'POST /agents/initAgent',
      schema: InitAgentResultSchema, body: registration,
    });
  }

  patchAgent(name: string, patch: AgentPatch): Promise<AgentRecord> {
    return this.#request({
      method: 'PATCH', path: `${API}/agents/${enc(name)}`, endpoint: 'PATCH /agents/{agent_name}',
      schema: AgentRecordSchema.loose(), body: patch,
    });
  }

  getAgentControls(name: string): Promise<AgentControls> {
    return this.#request({
      method: 'GET', path: `${API}/agents/${enc(name)}/controls`, endpoint: 'GET /agents/{agent_name}/controls',
      schema: AgentControlsSchema,
    });
  }

  async link(agentName: string, controlId: number): Promise<{ linked: boolean }> {
    const out = await this.#request({
      method: 'POST', path: `${API}/agents/${enc(agentName)}/controls/${controlId}`,
      endpoint: 'POST /agents/{agent_name}/controls/{control_id}', schema: LinkResultSchema,
    });
    return { linked: out.linked };
  }

  /** Deletes the agent and its links; the controls stay. */
  async deleteAgent(agentName: string): Promise<{ agent_name: string; unlinked_controls: number[] }> {
    const out = await this.#request({
      method: 'DELETE', path: `${API}/agents/${enc(agentName)}`,
      endpoint: 'DELETE /agents/{agent_name}', schema: DeleteAgentResultSchema,
    });
    return { agent_name: out.agent_name, unlinked_controls: out.unlinked_controls };
  }

  async unlink(agentName: string, controlId: number): Promise<{ unlinked: boolean }> {
    const out = await this.#request({
      method: 'DELETE', path: `${API}/agents/${enc(agentName)}/controls/${controlId}`,
      endpoint: 'DELETE /agents/{agent_name}/controls/{control_id}', schema: UnlinkResultSchema,
    });
    return { unlinked: out.unlinked };
  }

  // ---- evaluation ----

  evaluate(
    request: { agent_name: string; stage: Stage; step: Step } | EvaluationRequest,
    options: { headers?: Record<string, string> } = {},
  ): Promise<EvaluationResult> {
    return this.#request({
      method: 'POST', path: `${API}/evaluation`, endpoint: 'POST /evaluation', schema: EvaluationResultSchema,
      body: request, headers: options.headers ?? {},
    });
  }

  /** GET /sessions/{id}?agent_name=: a session's labels with who added them (docs/sessions.md); ApiError 404 when unknown. */
  getSession(sessionId: string, agentName: string): Promise<SessionInfo> {
    return this.#request({
      method: 'GET', path: `${API}/sessions/${enc(sessionId)}`, endpoint: 'GET /sessions/{session_id}', schema: SessionInfoSchema,
      query: { agent_name: agentName },
    });
  }

  // ---- observability ----

  ingestEvents(events: ObservabilityEvent[]): Promise<IngestResult> {
    return this.#request({
      method: 'POST', path: `${API}/observability/events`, endpoint: 'POST /observability/events',
      schema: IngestResultSchema, body: { events },
    });
  }

  /** `ingestEvents` with each event already serialised (JSON.stringify of an ObservabilityEvent). */
  ingestEventsJson(events: readonly string[]): Promise<IngestResult> {
    return this.#request({
      method: 'POST', path: `${API}/observability/events`, endpoint: 'POST /observability/events',
      schema: IngestResultSchema, bodyJson: `{"events":[${events.join(',')}]}`,
    });
  }

  queryEvents(query: EventQueryBody = {}): Promise<EventQueryResult> {
    return this.#request({
      method: 'POST', path: `${API}/observability/events/query`, endpoint: 'POST /observability/events/query',
      schema: EventQueryResultSchema, body: query,
    });
  }

  stats(params: StatsParams = {}): Promise<AgentStats> {
    return this.#request({
      method: 'GET', path: `${API}/observability/stats`, endpoint: 'GET /observability/stats', schema: AgentStatsSchema,
      query: { agent_name: params.agent_name, time_range: params.time_range },
    });
  }

  controlStats(controlId: number, params: StatsParams = {}): Promise<ControlStatsResult> {
    return this.#request({
      method: 'GET', path: `${API}/observability/stats/controls/${controlId}`,
      endpoint: 'GET /observability/stats/controls/{control_id}', schema: ControlStatsSchema,
      query: { agent_name: params.agent_name, time_range: params.time_range },
    });
  }

  // ---- history and audit ----

  /** One page of a control's revisions, newest first; `cursor` is the previous page's `next_cursor`. */
  controlHistory(id: number, page: { cursor?: number | null; limit?: number } = {}): Promise<ControlHistory> {
    return this.#request({
      method: 'GET', path: `${API}/controls/${id}/history`, endpoint: 'GET /controls/{control_id}/history',
      schema: ControlHistorySchema, query: { cursor: page.cursor ?? undefined, limit: page.limit },
    });
  }

  /** Puts a hand-managed control back as it was at `revision` (admin). */
  restoreControl(id: number, revision: number): Promise<RestoreResult> {
    return this.#request({
      method: 'POST', path: `${API}/controls/${id}/restore`, endpoint: 'POST /controls/{control_id}/restore',
      schema: RestoreResultSchema, body: { revision },
    });
  }

  /** One page of the audit log (admin), newest first. `since` is an ISO time or a duration such as 24h. */
  audit(query: { since?: string; actor?: string; cursor?: number | null; limit?: number } = {}): Promise<AuditPage> {
    return this.#request({
      method: 'GET', path: `${API}/audit`, endpoint: 'GET /audit', schema: AuditPageSchema,
      query: { since: query.since, actor: query.actor, cursor: query.cursor ?? undefined, limit: query.limit },
    });
  }

  /** Every control in shadow mode with its figures; `since` is an ISO time or a duration such as 24h. */
  shadowReport(query: { since?: string; agent_name?: string } = {}): Promise<ShadowReport> {
    return this.#request({
      method: 'GET', path: `${API}/shadow-report`, endpoint: 'GET /shadow-report', schema: ShadowReportSchema,
      query: { since: query.since, agent_name: query.agent_name },
    });
  }

  // ---- recordings (plan --replay) ----

  /** One page of recorded steps, oldest first; `next_cursor` is null on the last page. */
  listRecordings(page: { agent_name?: string; since?: string; limit?: number; cursor?: number | null } = {}): Promise<RecordingPage> {
    return this.#request({
      method: 'GET', path: `${API}/recordings`, endpoint: 'GET /recordings', schema: RecordingPageSchema,
      query: { agent_name: page.agent_name, since: page.since, limit: page.limit, cursor: page.cursor ?? undefined },
    });
  }
}
