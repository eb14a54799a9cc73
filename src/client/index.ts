export { GuardClient, DEFAULT_TIMEOUT_MS } from './client.js';
export type { ApprovalsApi } from './approvals.js';
export type { McpServersApi, McpServerWriteBody } from './mcp-servers.js';
export type { PoliciesApi, PolicyDetail, PolicyHistoryPage, PolicyList, PolicyWriteBody } from './policies.js';
export type {
  GuardClientOptions,
  NewControlBody,
  ControlPatchBody,
  AgentRegistrationBody,
  EventQueryBody,
  StatsParams,
} from './client.js';
export type { ChangeBody } from '../model/index.js';
export { ConnectionError, ResponseShapeError } from './errors.js';
export { ApiError } from '../errors.js';
export type {
  Ack,
  AgentControls,
  AgentDetail,
  AgentStats,
  AppliedChanges,
  AuditPage,
  ControlHistory,
  RestoreResult,
  ControlList,
  ControlStats,
  ControlStatsResult,
  CounterUse,
  CreatedControl,
  EvaluatorInfo,
  EventQueryResult,
  Health,
  IngestResult,
  InitAgentResult,
  RecordingPage,
} from './schemas.js';
