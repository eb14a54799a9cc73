/**
 * The embedded store: one SQLite file (or `:memory:`) through better-sqlite3, one
 * connection shared by its five concerns (controls.ts, events.ts, recordings.ts, history.ts,
 * approvals.ts).
 * Every statement is prepared once; every multi-row change runs inside one
 * transaction, so a failure rolls the whole change back.
 */
import { ComposedStore } from '../composed-store.js';
import type { LocalParts } from '../store-sharing.js';
import { SqliteApprovals } from './approvals.js';
import { SqliteControls } from './controls.js';
import { SqliteCounters } from './counters.js';
import { SqliteDatabase, type SqliteStoreOptions } from './database.js';
import { SqliteEvents } from './events.js';
import { SqliteHistory } from './history.js';
import { SqlitePolicies } from './policies.js';
import { SqliteMcpServers } from './mcp-servers.js';
import { SqliteRecordings } from './recordings.js';
import { SqliteSessions } from './sessions.js';

export { migrateSqlite, type SqliteStoreOptions } from './database.js';

export class SqliteStore extends ComposedStore {
  readonly kind = 'sqlite' as const;
  private readonly database: SqliteDatabase;
  readonly counterRows: SqliteCounters;
  readonly sessionRows: SqliteSessions;
  readonly sharing: LocalParts;

  constructor(path: string, options: SqliteStoreOptions = {}) {
    const database = new SqliteDatabase(path, options);
    const history = new SqliteHistory(database, options.history !== false);
    const policies = new SqlitePolicies(database, history);
    const mcpServers = new SqliteMcpServers(database, history);
    super(new SqliteControls(database, history, policies, mcpServers), policies, mcpServers, new SqliteEvents(database), new SqliteRecordings(database), history, new SqliteApprovals(database));
    this.database = database;
    this.counterRows = new SqliteCounters(database);
    this.sessionRows = new SqliteSessions(database);
    this.sharing = { mode: 'local', counterRows: this.counterRows, sessionRows: this.sessionRows };
  }

  async close(): Promise<void> {
    this.database.close();
  }
}
