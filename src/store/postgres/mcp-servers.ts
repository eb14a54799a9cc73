/** Pinned MCP servers in PostgreSQL: one row per server, the pinned document as JSONB. */
import type { McpServerBody, McpServerRecord, NewMcpServer } from '../../model/index.js';
import { documentOf, mcpServerEntry, mcpServerRecordOf, mcpServerSnapshot, type McpServerPage, type McpServerStore } from '../mcp-server-records.js';
import { nowIso } from '../records.js';
import { StoreError } from '../types.js';
import type { PostgresDatabase, WriteTx } from './database.js';

interface Row {
  mcp_server_id: string;
  name: string;
  document: Omit<McpServerBody, 'name'>;
  managed_by: string | null;
  source: string | null;
  created_at: Date;
  updated_at: Date;
}

function recordOf(row: Row): McpServerRecord {
  return mcpServerRecordOf(row, row.document, { created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString() });
}

export class PostgresMcpServers implements McpServerStore {
  constructor(private readonly database: PostgresDatabase) {}

  /** The change steps of a batch's transaction. */
  stepsTx(tx: WriteTx) {
    return { upsertMcpServer: (server: NewMcpServer) => this.upsertTx(tx, server), deleteMcpServer: (name: string) => this.deleteByNameTx(tx, name) };
  }

  /** Creates the server or replaces the one of that name, inside the batch's transaction. */
  async upsertTx(tx: WriteTx, server: NewMcpServer): Promise<void> {
    const [existing] = await this.database.rows<Row>(tx, 'SELECT * FROM mcp_servers WHERE name = $1 FOR UPDATE', [server.name]);
    const values = [JSON.stringify(documentOf(server)), server.managed_by ?? null, server.source ?? null, nowIso()];
    const [row] = existing
      ? await this.database.rows<Row>(tx, 'UPDATE mcp_servers SET document = $1, managed_by = $2, source = $3, updated_at = $4 WHERE mcp_server_id = $5 RETURNING *', [...values, existing.mcp_server_id])
      : await this.database.rows<Row>(tx, 'INSERT INTO mcp_servers (document, managed_by, source, created_at, updated_at, name) VALUES ($1, $2, $3, $4, $4, $5) RETURNING *', [...values, server.name]);
    tx.changed = true;
    tx.entries.push(mcpServerEntry(existing ? 'update' : 'create', existing ? mcpServerSnapshot(recordOf(existing)) : null, mcpServerSnapshot(recordOf(row!))));
  }

  async deleteByNameTx(tx: WriteTx, name: string): Promise<void> {
    const [existing] = await this.database.rows<Row>(tx, 'DELETE FROM mcp_servers WHERE name = $1 RETURNING *', [name]);
    if (!existing) throw new StoreError('not_found', `McpServer "${name}" not found`);
    tx.changed = true;
    tx.entries.push(mcpServerEntry('delete', mcpServerSnapshot(recordOf(existing)), null));
  }

  async getMcpServerByName(name: string): Promise<McpServerRecord | null> {
    const [row] = await this.database.query<Row>('SELECT * FROM mcp_servers WHERE name = $1', [name]);
    return row ? recordOf(row) : null;
  }

  async listMcpServers(page: { cursor?: number | undefined; limit: number }): Promise<McpServerPage> {
    const limit = Math.max(1, Math.floor(page.limit));
    const rows = await this.database.query<Row & { total: string }>(
      'SELECT *, (SELECT count(*) FROM mcp_servers) AS total FROM mcp_servers WHERE mcp_server_id > $1 ORDER BY mcp_server_id LIMIT $2',
      [page.cursor ?? 0, limit + 1],
    );
    const has_more = rows.length > limit;
    const mcp_servers = rows.slice(0, limit).map(recordOf);
    const total = rows[0] ? Number(rows[0].total) : Number((await this.database.query<{ n: string }>('SELECT count(*) AS n FROM mcp_servers'))[0]?.n ?? 0);
    return { mcp_servers, has_more, next_cursor: has_more ? mcp_servers.at(-1)!.mcp_server_id : null, total };
  }

  async listAllMcpServers(): Promise<McpServerRecord[]> {
    return (await this.database.query<Row>('SELECT * FROM mcp_servers ORDER BY mcp_server_id')).map(recordOf);
  }
}
