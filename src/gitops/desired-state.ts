/**
 * The two sides a plan compares: the directory (desired) and the server (actual), both
 * normalised so that equal meaning gives equal data. Pure.
 */
import { type AgentRecord, type AgentSelector, type ControlData, type Labels, type McpServerBody, type McpServerRecord, type StepDecl } from '../model/index.js';
import type { LoadResult } from './load.js';

export interface DesiredControl {
  name: string;
  data: ControlData;
  /** `file:line` of the document, stored on the server so people know where to edit. */
  source: string | null;
}

/** The agent fields a document sets; fields it leaves out are left alone on the server. */
export interface AgentFields {
  agent_description?: string | null;
  agent_version?: string | null;
  steps?: StepDecl[];
  metadata?: Record<string, unknown> | null;
  labels?: Labels;
}

/** A `kind: Policy` document: controls (by name) bound to the agents its selector picks. */
export interface DesiredPolicy {
  name: string;
  description: string | null;
  controls: string[];
  agents: AgentSelector;
  source: string | null;
}

/** A policy on the server. */
export interface ActualPolicy extends DesiredPolicy {
  managed_by: string | null;
}

/** A `kind: McpServer` document: a pinned MCP server. */
export interface DesiredMcpServer {
  server: McpServerBody;
  source: string | null;
}

/** A pinned MCP server on the server. */
export interface ActualMcpServer extends DesiredMcpServer {
  managed_by: string | null;
}

export interface DesiredAgent {
  agent_name: string;
  fields: AgentFields;
  /** Names of linked controls, sorted, unique. The directory is the truth for these. */
  controls: string[];
}

export interface DesiredState {
  controls: DesiredControl[];
  agents: DesiredAgent[];
  /** Absent: the directory says nothing about policies (older callers). */
  policies?: DesiredPolicy[];
  /** Absent: the directory says nothing about MCP servers (older callers). */
  mcp_servers?: DesiredMcpServer[];
}

export interface ActualControl {
  control_id: number;
  name: string;
  enabled: boolean;
  data: ControlData | null;
  managed_by: string | null;
  source: string | null;
}

export interface ActualAgent {
  agent_name: string;
  agent_description: string | null;
  agent_version: string | null;
  steps: StepDecl[];
  metadata: Record<string, unknown> | null;
  /** Absent from servers without labels. */
  labels?: Labels;
  /** Names of linked controls, sorted. */
  controls: string[];
}

export interface ActualState {
  controls: ActualControl[];
  agents: ActualAgent[];
  /** Absent: not read (a server without policies). */
  policies?: ActualPolicy[];
  /** Absent: not read (a server without pinned MCP servers). */
  mcp_servers?: ActualMcpServer[];
  /**
   * The store revision the state was read at, when the server told: apply sends it with its
   * first batch, so a plan made against a state that changed since is refused, not mixed in.
   */
  revision?: number;
}

const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const byAgent = <T extends { agent_name: string }>(a: T, b: T) =>
  a.agent_name < b.agent_name ? -1 : a.agent_name > b.agent_name ? 1 : 0;

export function desiredStateOf(loaded: Pick<LoadResult, 'controls' | 'agents'> & Partial<Pick<LoadResult, 'policies' | 'mcpServers'>>): DesiredState {
  const controls = loaded.controls
    .map((c) => ({ name: c.name, data: c.data, source: `${c.source.file}:${c.source.line}` }))
    .sort(byName);
  const agents = loaded.agents
    .map((a): DesiredAgent => {
      const doc = a.document;
      const fields: AgentFields = {};
      if (doc.agent_description !== undefined) fields.agent_description = doc.agent_description;
      if (doc.agent_version !== undefined) fields.agent_version = doc.agent_version;
      if (doc.steps !== undefined) fields.steps = doc.steps;
      if (doc.metadata !== undefined) fields.metadata = doc.metadata;
      if (doc.labels !== undefined) fields.labels = doc.labels;
      return { agent_name: a.agent_name, fields, controls: [...new Set(a.controls)].sort() };
    })
    .sort(byAgent);
  const policies = (loaded.policies ?? [])
    .map((p): DesiredPolicy => ({
      name: p.document.name,
      description: p.document.description ?? null,
      // A control listed twice is bound once, as the server stores it.
      controls: [...new Set(p.document.controls)],
      agents: p.document.agents,
      source: `${p.source.file}:${p.source.line}`,
    }))
    .sort(byName);
  const mcp_servers = loaded.mcpServers
    ?.map((m): DesiredMcpServer => {
      const { kind: _kind, ...server } = m.document;
      return { server, source: `${m.source.file}:${m.source.line}` };
    })
    .sort((a, b) => byName(a.server, b.server));
  return { controls, agents, policies, ...(mcp_servers ? { mcp_servers } : {}) };
}

/** Stored records -> the McpServer part of the actual state. */
export function actualMcpServersOf(records: readonly McpServerRecord[]): ActualMcpServer[] {
  return records
    .map(({ mcp_server_id: _id, created_at: _c, updated_at: _u, managed_by, source, ...server }) => ({ server, managed_by, source }))
    .sort((a, b) => byName(a.server, b.server));
}

/** Server records -> actual state, sorted by name. */
export function actualStateOf(
  controls: ReadonlyArray<{ control_id: number; name: string; enabled: boolean; data: unknown; managed_by?: string | null; source?: string | null }>,
  agents: ReadonlyArray<Pick<AgentRecord, 'agent_name' | 'agent_description' | 'agent_version' | 'steps' | 'metadata'> & { controls: string[]; labels?: Labels }>,
  policies?: ReadonlyArray<Omit<ActualPolicy, 'source'> & { source: string | null }>,
): ActualState {
  return {
    ...(policies ? { policies: policies.map((p) => ({ name: p.name, description: p.description, controls: p.controls, agents: p.agents, source: p.source, managed_by: p.managed_by })).sort(byName) } : {}),
    controls: controls
      .map((c) => ({
        control_id: c.control_id,
        name: c.name,
        enabled: c.enabled,
        // Records come from the client or a store, both already parsed with the model schema.
        data: (c.data ?? null) as ControlData | null,
        managed_by: c.managed_by ?? null,
        source: c.source ?? null,
      }))
      .sort(byName),
    agents: agents
      .map((a) => ({
        agent_name: a.agent_name,
        agent_description: a.agent_description ?? null,
        agent_version: a.agent_version ?? null,
        steps: a.steps ?? [],
        metadata: a.metadata ?? null,
        ...(a.labels ? { labels: a.labels } : {}),
        controls: [...new Set(a.controls)].sort(),
      }))
      .sort(byAgent),
  };
}

export const EMPTY_STATE: ActualState = Object.freeze({ controls: [], agents: [] });
