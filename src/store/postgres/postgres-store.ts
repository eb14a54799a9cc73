/**
 * The shared store for several server replicas: PostgreSQL through a pg Pool, one pool
 * shared by its four concerns (controls.ts, events.ts, recordings.ts, history.ts). Every write
 * transaction bumps the revision and sends NOTIFY inside the transaction, so replicas
 * hear of it on commit (change-listener.ts).
 */
import { ComposedStore } from '../composed-store.js';
import type { ChangeInfo, SharedParts } from '../store-sharing.js';
import { PostgresApprovals } from './approvals.js';
import { ChangeListener, CHANGES } from './change-listener.js';
import { PostgresControls } from './controls.js';
import { PostgresCounters } from './counters.js';
import { PostgresDatabase, type PostgresStoreOptions } from './database.js';
import { PostgresEvents } from './events.js';
import { PostgresHistory } from './history.js';
import { PostgresPolicies } from './policies.js';
import { PostgresMcpServers } from './mcp-servers.js';
import { PostgresRecordings } from './recordings.js';
import { PostgresSessions } from './sessions.js';

export { migratePostgres, type PostgresStoreOptions } from './database.js';

export class PostgresStore extends ComposedStore {
  readonly kind = 'postgres' as const;
  private readonly listener: ChangeListener;
  readonly sharedCounters: PostgresCounters;
  readonly sharedSessions: PostgresSessions;
  readonly sharing: SharedParts;

  private constructor(
    private readonly database: PostgresDatabase,
    options: PostgresStoreOptions,
  ) {
    const history = new PostgresHistory(database);
    const policies = new PostgresPolicies(database);
    const mcpServers = new PostgresMcpServers(database);
    super(new PostgresControls(database, history, policies, mcpServers), policies, mcpServers, new PostgresEvents(database), new PostgresRecordings(database), history, new PostgresApprovals(database));
    this.sharedCounters = new PostgresCounters(database, options.counterTimeoutMs);
    this.sharedSessions = new PostgresSessions(database, options.listenerRetryMs ?? 1000);
    this.listener = new ChangeListener(
      { ...database.clientConfig, application_name: 'guardctl-listener' },
      options.listenerRetryMs ?? 1000,
      CHANGES,
    );
    this.sharing = {
      mode: 'shared',
      counters: this.sharedCounters,
      sessions: this.sharedSessions,
      onChange: (listener) => this.onChange(listener),
      databaseTime: () => database.databaseTime(),
    };
  }

  /** Connects, migrates under the advisory lock, and returns a ready store. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    return new PostgresStore(await PostgresDatabase.open(url, options), options);
  }

  /**
   * Calls `listener` after any instance commits a write to controls, agents or links.
   * `agents` lists the agents whose controls changed; null means "any" (after the
   * listener reconnected, or when the list was too long to send).
   */
  onChange(listener: (info: ChangeInfo) => void): () => void {
    return this.listener.subscribe(listener);
  }

  /** Resolves once this store's change listener is subscribed (after the first onChange). */
  listening(): Promise<void> {
    return this.listener.listening();
  }

  /** The server process id of the change listener's session, or null when not connected. */
  listenerBackendPid(): number | null {
    return this.listener.backendPid();
  }

  async close(): Promise<void> {
    await this.listener.close();
    await this.sharedSessions.close();
    await this.database.close();
  }
}
