/**
 * What both stores share about pinned MCP servers: the stored document (one JSON column:
 * the gateway reads it whole, nothing queries inside it), records from rows, history
 * snapshots. Pure: no database here.
 */
import type { McpServerBody, McpServerRecord, NewMcpServer } from '../model/index.js';
import type { NewChangeEntry } from './history.js';

export interface McpServerPage {
  mcp_servers: McpServerRecord[];
  next_cursor: number | null;
  has_more: boolean;
  total: number;
}

/**
 * Pinned MCP servers (`kind: McpServer`). Writes bump the store revision like every other
 * write, so plans made against a state that changed since are refused.
 */
export interface McpServerStore {
  getMcpServerByName(name: string): Promise<McpServerRecord | null>;
  /** Ordered by mcp_server_id; `cursor` is the last id of the previous page. */
  listMcpServers(page: { cursor?: number | undefined; limit: number }): Promise<McpServerPage>;
  listAllMcpServers(): Promise<McpServerRecord[]>;
}

/** The stored document: the body without its name (a column of its own). */
export function documentOf(server: NewMcpServer): Omit<McpServerBody, 'name'> {
  const { name: _name, managed_by: _owner, source: _source, ...rest } = server;
  return rest;
}

export function mcpServerRecordOf(
  row: { mcp_server_id: number | string; name: string; managed_by: string | null; source: string | null },
  document: Omit<McpServerBody, 'name'>,
  times: { created_at: string; updated_at: string },
): McpServerRecord {
  return { mcp_server_id: Number(row.mcp_server_id), name: row.name, ...document, managed_by: row.managed_by, source: row.source, ...times };
}

/** What a server's history entries keep: the record without id and times. */
export function mcpServerSnapshot(record: Omit<McpServerRecord, 'mcp_server_id' | 'created_at' | 'updated_at'> | McpServerRecord): object {
  const { mcp_server_id: _id, created_at: _c, updated_at: _u, ...rest } = record as McpServerRecord;
  return rest;
}

export function mcpServerEntry(op: 'create' | 'update' | 'delete', before: object | null, after: object | null): NewChangeEntry {
  return { kind: 'mcp_server', op, control_id: null, control_name: null, agent_name: null, before, after, note: null };
}
