/** Pinned MCP servers in SQLite: one row per server, the pinned document as JSON text. */
import type { McpServerBody, McpServerRecord, NewMcpServer, WriteOrigin } from '../../model/index.js';
import { documentOf, mcpServerEntry, mcpServerRecordOf, mcpServerSnapshot, type McpServerPage, type McpServerStore } from '../mcp-server-records.js';
import { nowIso } from '../records.js';
import { StoreError } from '../types.js';
import type { SqliteDatabase } from './database.js';
import type { SqliteHistory } from './history.js';

interface Row {
  mcp_server_id: number;
  name: string;
  document: string;
  managed_by: string | null;
  source: string | null;
  created_at: string;
  updated_at: string;
}

function recordOf(row: Row): McpServerRecord {
  return mcpServerRecordOf(row, JSON.parse(row.document) as Omit<McpServerBody, 'name'>, { created_at: row.created_at, updated_at: row.updated_at });
}

export class SqliteMcpServers implements McpServerStore {
  private readonly s;

  constructor(
    private readonly database: SqliteDatabase,
    private readonly history: SqliteHistory,
  ) {
    const db = database.db;
    this.s = {
      bump: db.prepare('UPDATE store_revision SET value = value + 1 WHERE id = 1 RETURNING value').pluck(),
      byName: db.prepare('SELECT * FROM mcp_servers WHERE name = ?'),
      after: db.prepare('SELECT * FROM mcp_servers WHERE mcp_server_id > ? ORDER BY mcp_server_id LIMIT ?'),
      all: db.prepare('SELECT * FROM mcp_servers ORDER BY mcp_server_id'),
      count: db.prepare('SELECT count(*) FROM mcp_servers').pluck(),
      insert: db.prepare(
        `INSERT INTO mcp_servers (name, document, managed_by, source, created_at, updated_at)
         VALUES (@name, @document, @managed_by, @source, @now, @now) RETURNING *`,
      ),
      update: db.prepare(
        `UPDATE mcp_servers SET document = @document, managed_by = @managed_by, source = @source, updated_at = @now
         WHERE mcp_server_id = @id RETURNING *`,
      ),
      delete: db.prepare('DELETE FROM mcp_servers WHERE mcp_server_id = ?'),
    };
  }

  /** The change steps of a batch's transaction. */
  stepsTx(origin: WriteOrigin) {
    return { upsertMcpServer: (server: NewMcpServer) => this.upsertTx(server, origin), deleteMcpServer: (name: string) => this.deleteByNameTx(name, origin) };
  }

  /** Creates the server or replaces the one of that name; call inside a write transaction. */
  upsertTx(server: NewMcpServer, origin: WriteOrigin): McpServerRecord {
    const existing = this.s.byName.get(server.name) as Row | undefined;
    const params = { name: server.name, document: JSON.stringify(documentOf(server)), managed_by: server.managed_by ?? null, source: server.source ?? null, now: nowIso() };
    const row = (existing ? this.s.update.get({ ...params, id: existing.mcp_server_id }) : this.s.insert.get(params)) as Row;
    const record = recordOf(row);
    this.history.record(this.s.bump.get() as number, origin, () =>
      mcpServerEntry(existing ? 'update' : 'create', existing ? mcpServerSnapshot(recordOf(existing)) : null, mcpServerSnapshot(record)),
    );
    return record;
  }

  /** Deletes the server of that name; call inside a write transaction. */
  deleteByNameTx(name: string, origin: WriteOrigin): void {
    const existing = this.s.byName.get(name) as Row | undefined;
    if (!existing) throw new StoreError('not_found', `McpServer "${name}" not found`);
    this.s.delete.run(existing.mcp_server_id);
    this.history.record(this.s.bump.get() as number, origin, () => mcpServerEntry('delete', mcpServerSnapshot(recordOf(existing)), null));
  }

  async getMcpServerByName(name: string): Promise<McpServerRecord | null> {
    return this.database.read(() => {
      const row = this.s.byName.get(name) as Row | undefined;
      return row ? recordOf(row) : null;
    });
  }

  async listMcpServers(page: { cursor?: number | undefined; limit: number }): Promise<McpServerPage> {
    return this.database.read(() => {
      const rows = this.s.after.all(page.cursor ?? 0, page.limit + 1) as Row[];
      const has_more = rows.length > page.limit;
      const mcp_servers = rows.slice(0, page.limit).map(recordOf);
      return { mcp_servers, has_more, next_cursor: has_more ? mcp_servers.at(-1)!.mcp_server_id : null, total: this.s.count.get() as number };
    });
  }

  async listAllMcpServers(): Promise<McpServerRecord[]> {
    return this.database.read(() => (this.s.all.all() as Row[]).map(recordOf));
  }
}
