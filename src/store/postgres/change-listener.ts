/**
 * Listens on the `guardctl_changes` channel (or another: ChannelSpec) with a dedicated
 * connection (LISTEN needs a session of its own; a pooled client would be handed to other
 * queries). When that connection drops it reconnects, and then tells listeners "anything
 * may have changed" because notifications sent while it was away are lost.
 */
import pg from 'pg';
import type { ChangeInfo } from '../types.js';

export const CHANGE_CHANNEL = 'guardctl_changes';

/**
 * Parses a notification payload: `{"revision": n, "agents": [...] | "*"}`, or the older
 * forms a replica of an earlier version sends (a JSON list of agent names, or "*").
 */
export function changeInfoOf(payload: string | undefined): ChangeInfo {
  try {
    const parsed: unknown = JSON.parse(payload ?? '"*"');
    if (isAgentList(parsed)) return { agents: parsed };
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const { revision, agents } = parsed as { revision?: unknown; agents?: unknown };
      const info: ChangeInfo = { agents: isAgentList(agents) ? agents : null };
      if (typeof revision === 'number' && Number.isSafeInteger(revision)) info.revision = revision;
      return info;
    }
  } catch {
    // A payload we cannot read still means something changed.
  }
  return { agents: null };
}

function isAgentList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((a) => typeof a === 'string');
}

/** A channel, how its payloads read, and what listeners hear when LISTEN is (re)established. */
export interface ChannelSpec<T> {
  readonly name: string;
  readonly parse: (payload: string | undefined) => T;
  readonly reconnected: T;
  /** Also heard on the first connection (not only after a reconnect). */
  readonly announceFirst?: boolean;
}

export const CHANGES: ChannelSpec<ChangeInfo> = { name: CHANGE_CHANNEL, parse: changeInfoOf, reconnected: { agents: null } };

export class ChangeListener<T = ChangeInfo> {
  private readonly listeners = new Set<(info: T) => void>();
  private client: pg.Client | null = null;
  private started = false;
  private closed = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private connectedOnce = false;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly retryMs: number,
    private readonly channel: ChannelSpec<T>,
  ) {}

  subscribe(listener: (info: T) => void): () => void {
    this.listeners.add(listener);
    if (!this.started && !this.closed) {
      this.started = true;
      void this.connect();
    }
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Resolves once LISTEN is in effect (at once when it already is). */
  listening(): Promise<void> {
    if (this.client) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The server process id of the listening session, for diagnostics. */
  backendPid(): number | null {
    // pg sets processID at connect but its typings do not declare it.
    const pid: unknown = this.client ? Reflect.get(this.client, 'processID') : null;
    return typeof pid === 'number' ? pid : null;
  }

  private emit(info: T): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(info);
      } catch {
        // One failing listener must not stop the others from hearing about the change.
      }
    }
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client(this.config);
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = null;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      this.scheduleRetry();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (message) => {
      if (message.channel === this.channel.name) this.emit(this.channel.parse(message.payload));
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel.name}`);
    } catch {
      onLost();
      return;
    }
    if (this.closed || lost) {
      void client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    if (this.connectedOnce || this.channel.announceFirst === true) this.emit(this.channel.reconnected);
    this.connectedOnce = true;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  private scheduleRetry(): void {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.connect();
    }, this.retryMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.listeners.clear();
    const client = this.client;
    this.client = null;
    if (client) {
      client.removeAllListeners('end');
      client.removeAllListeners('error');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
    }
  }
}
