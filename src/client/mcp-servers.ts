/**
 * The pinned MCP servers part of the REST client (`client.mcpServers`): `/api/v1/mcp-servers`.
 * `get` answers null for a name nothing is pinned as (404), so a gateway can tell "not
 * pinned" from "the guard server is unreachable" (which throws).
 */
import { z } from 'zod';
import { McpServerRecordSchema, type McpDriftReportInput, type McpServerBody, type McpServerRecord } from '../model/index.js';
import { ApiError } from '../errors.js';
import { ResponseShapeError } from './errors.js';
import type { Transport } from './transport.js';

const API = '/api/v1';
const RecordResponse = McpServerRecordSchema.loose();
const ListSchema = z.looseObject({
  mcp_servers: z.array(RecordResponse),
  pagination: z.looseObject({ limit: z.number().int(), next_cursor: z.number().int().nullable(), has_more: z.boolean(), total: z.number().int() }),
});

export type McpServerWriteBody = McpServerBody & { managed_by?: string | null; source?: string | null };

export interface McpServersApi {
  list(page?: { cursor?: number | null; limit?: number }): Promise<z.infer<typeof ListSchema>>;
  listAll(pageSize?: number): Promise<McpServerRecord[]>;
  get(name: string): Promise<McpServerRecord | null>;
  put(server: McpServerWriteBody): Promise<McpServerRecord>;
  delete(name: string): Promise<void>;
  /** Reports a drifted tool of the server pinned as `name` (what a gateway sends). */
  reportDrift(name: string, report: McpDriftReportInput): Promise<{ counted: boolean; recorded: boolean }>;
}

export class McpServerClient implements McpServersApi {
  constructor(private readonly transport: Transport) {}

  list(page: { cursor?: number | null; limit?: number } = {}) {
    return this.transport.request({
      method: 'GET', path: `${API}/mcp-servers`, endpoint: 'GET /mcp-servers', schema: ListSchema,
      query: { cursor: page.cursor ?? undefined, limit: page.limit },
    });
  }

  async listAll(pageSize = 100): Promise<McpServerRecord[]> {
    const all: McpServerRecord[] = [];
    let cursor: number | undefined;
    for (;;) {
      const page = await this.list({ cursor, limit: pageSize });
      all.push(...page.mcp_servers);
      const next = page.pagination.next_cursor;
      if (!page.pagination.has_more || next === null) return all;
      if (next === cursor) throw new ResponseShapeError('GET /mcp-servers', this.transport.url(`${API}/mcp-servers`), `next_cursor ${next} does not advance`);
      cursor = next;
    }
  }

  async get(name: string): Promise<McpServerRecord | null> {
    try {
      return await this.transport.request({ method: 'GET', path: `${API}/mcp-servers/${encodeURIComponent(name)}`, endpoint: 'GET /mcp-servers/{name}', schema: RecordResponse });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  put(server: McpServerWriteBody): Promise<McpServerRecord> {
    return this.transport.request({
      method: 'PUT', path: `${API}/mcp-servers/${encodeURIComponent(server.name)}`, endpoint: 'PUT /mcp-servers/{name}', schema: RecordResponse, body: server,
    });
  }

  async delete(name: string): Promise<void> {
    await this.transport.request({
      method: 'DELETE', path: `${API}/mcp-servers/${encodeURIComponent(name)}`, endpoint: 'DELETE /mcp-servers/{name}', schema: z.looseObject({ deleted: z.literal(true) }),
    });
  }

  reportDrift(name: string, report: McpDriftReportInput): Promise<{ counted: boolean; recorded: boolean }> {
    return this.transport.request({
      method: 'POST', path: `${API}/mcp-servers/${encodeURIComponent(name)}/drift`, endpoint: 'POST /mcp-servers/{name}/drift',
      schema: z.looseObject({ counted: z.boolean(), recorded: z.boolean() }), body: report,
    });
  }
}
