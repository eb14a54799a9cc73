/**
 * Steps of sessions this replica read lately, answered without the database, and still
 * exact across replicas (docs/sessions.md):
 *
 * - A session's labels and epoch, once read by a step that went to the database, answer
 *   the session's next steps here for a short while (at most CACHE_MS, a quarter of the
 *   TTL): those steps are counted in memory and their counts and last-seen times written
 *   with the next ping (every PING_EVERY_MS). A session read within the TTL cannot expire
 *   while it is cached (its last-seen time was moved at the read), so its epoch holds.
 * - Labels are the one thing another replica can change. A replica that adds a label
 *   sends, in the transaction that stores it, a `drop` of that session to every replica;
 *   after the commit it reads which replicas may be caching (session_cachers) and does
 *   not answer until each of them has acknowledged the drop or has passed its time there.
 *   A replica acknowledges a drop once the session is out of its cache; a read under way
 *   when a drop arrives is not cached (it may predate the label). Its own drops empty its
 *   cache too: a label statement whose client gave up may still commit. So a step that starts
 *   after the adder's answer, on any replica, reads the label from the database.
 * - A replica answers from its cache only while a ping it heard back says its listener
 *   hears drops: the ping is sent in the transaction that renews the replica's time in
 *   session_cachers, notifications arrive in commit order, so hearing the ping back means
 *   every drop committed before it was heard; the cache is usable until the ping's time
 *   there, measured on this host's clock from before it was sent. A replica whose
 *   listener is cut (or that hangs) stops using its cache by then, and an adder that got
 *   no acknowledgement from it waits exactly that long. A reconnected listener empties
 *   the cache: drops sent while it was away are lost.
 */
import { randomUUID } from 'node:crypto';
import type { SharedSessionStep } from '../types.js';
import { ChangeListener, type ChannelSpec } from './change-listener.js';
import type { PostgresDatabase } from './database.js';
import { SESSION_CACHE_CHANNEL } from './session-ping.js';

/** How long after a ping was sent the cache may answer, once the ping was heard back. */
const VALID_MS = 3000;
/** Taken off VALID_MS on this host: two hosts' clocks may run at slightly different rates. */
const VALID_MARGIN_MS = 200;
/** Pings (and the writes of counts taken in memory) this often. */
const PING_EVERY_MS = 1000;
/** A session is read from the database again this long after its last read, at most. */
const CACHE_MS = 5000;

type Message =
  | { k: 'drop'; a: string; s: string; from: string; t: number }
  | { k: 'ack'; to: string; from: string; t: number }
  | { k: 'ping'; from: string; n: number }
  | { k: 'listening' }
  | { k: 'other' };

function messageOf(payload: string | undefined): Message {
  try {
    const m = JSON.parse(payload ?? 'null') as Message | null;
    return m !== null && typeof m === 'object' && typeof m.k === 'string' ? m : { k: 'other' };
  } catch {
    return { k: 'other' };
  }
}

const CHANNEL: ChannelSpec<Message> = { name: SESSION_CACHE_CHANNEL, parse: messageOf, reconnected: { k: 'listening' }, announceFirst: true };

interface Entry {
  readonly agentName: string;
  readonly sessionId: string;
  readonly step: SharedSessionStep;
  /** The session clock's time of the step that read it (the database's last-seen time is at least this). */
  readonly readAt: number;
  /** Steps answered from the cache since the last ping, and the latest of their times. */
  pending: number;
  lastSeen: number;
  /** It is in #dirty (its pending steps go with the next ping). */
  dirty: boolean;
}

/** A label's adder waiting for the cachers to drop the session. */
interface Waiter {
  readonly acked: Set<string>;
  holders: string[] | null;
  done: () => void;
}

export class SessionCache {
  readonly replica = randomUUID();
  /** Grows with every drop heard: a read under way across one is not cached. */
  #generation = 0;
  readonly #entries = new Map<string, Map<string, Entry>>();
  #dirty: Entry[] = [];
  /** performance.now() until which the cache may answer. */
  #usableUntil = 0;
  readonly #pingsSent = new Map<number, number>();
  #pingCount = 0;
  /** The latest session-clock time a step brought: entries read CACHE_MS before it are swept. */
  #latest = 0;
  #dropCount = 0;
  readonly #waiters = new Map<number, Waiter>();
  readonly #listener: ChangeListener<Message>;
  #timer: NodeJS.Timeout | undefined;
  #pinging: Promise<void> | undefined;
  #closed = false;
  /** LISTEN is in effect: until then this replica renews no time in session_cachers (it could not acknowledge). */
  #listening = false;
  /** Steps answered from the cache (for tests and diagnostics). */
  answered = 0;

  /** Pings sent and not yet heard back that could still let the cache answer (for tests and diagnostics). */
  get pingsAwaited(): number {
    return this.#pingsSent.size;
  }

  constructor(
    private readonly database: PostgresDatabase,
    retryMs: number,
  ) {
    this.#listener = new ChangeListener({ ...database.clientConfig, application_name: 'guardctl-sessions' }, retryMs, CHANNEL);
  }

  /** A step of a cached session, counted here; undefined when the database must be asked. */
  step(agentName: string, sessionId: string, now: number, ttlMs: number): SharedSessionStep | undefined {
    if (this.#timer === undefined) this.#start();
    if (now > this.#latest) this.#latest = now;
    if (performance.now() >= this.#usableUntil) return undefined;
    const entry = this.#entries.get(agentName)?.get(sessionId);
    if (entry === undefined || now < entry.readAt || now - entry.readAt >= Math.min(CACHE_MS, ttlMs / 4)) return undefined;
    entry.pending++;
    if (now > entry.lastSeen) entry.lastSeen = now;
    if (!entry.dirty) {
      entry.dirty = true;
      this.#dirty.push(entry);
    }
    this.answered++;
    return entry.step;
  }

  /** Where a read of the database starts: pass it to remember(). */
  get generation(): number {
    return this.#generation;
  }

  /** Caches what a step read, unless a drop was heard since the read began (it may predate a label). */
  remember(agentName: string, sessionId: string, step: SharedSessionStep, readAt: number, generation: number): void {
    if (generation !== this.#generation || this.#closed) return;
    let sessions = this.#entries.get(agentName);
    if (sessions === undefined) {
      sessions = new Map();
      this.#entries.set(agentName, sessions);
    }
    sessions.set(sessionId, { agentName, sessionId, step, readAt, pending: 0, lastSeen: readAt, dirty: false });
  }

  /**
   * After labels of the session were committed with `drop` (dropMessage): empties this
   * replica's entry, then waits until every other cacher acknowledged or passed its time.
   */
  async dropped(agentName: string, sessionId: string, token: number): Promise<void> {
    this.#forget(agentName, sessionId);
    const waiter = this.#waiters.get(token);
    if (waiter === undefined) return;
    try {
      let rows: Array<{ replica: string; left_ms: number }>;
      try {
        rows = await this.database.query(
          `SELECT replica, expires_at - extract(epoch FROM clock_timestamp()) * 1000 AS left_ms FROM session_cachers
            WHERE replica <> $1 AND expires_at > extract(epoch FROM clock_timestamp()) * 1000`,
          [this.replica],
        );
      } catch (error) {
        // Unknown who caches: no cache anywhere outlives VALID_MS from now, so the step's
        // failure is answered only once none can hold the session without the label.
        await new Promise((resolve) => setTimeout(resolve, VALID_MS));
        throw error;
      }
      if (rows.length === 0) return;
      await new Promise<void>((resolve) => {
        // Each cacher's time is on the database's clock; waited from here (after the read), it has passed.
        const timer = setTimeout(resolve, Math.max(...rows.map((r) => r.left_ms)) + 1);
        waiter.holders = rows.map((r) => r.replica);
        waiter.done = () => {
          clearTimeout(timer);
          resolve();
        };
        this.#settle(token, waiter);
      });
    } finally {
      this.#waiters.delete(token);
    }
  }

  /** The payload to send with a label's commit, and its token for dropped(). */
  dropMessage(agentName: string, sessionId: string): { payload: string; token: number } {
    const token = ++this.#dropCount;
    this.#waiters.set(token, { acked: new Set(), holders: null, done: () => undefined });
    return { payload: JSON.stringify({ k: 'drop', a: agentName, s: sessionId, from: this.replica, t: token }), token };
  }

  /** Writes the counts taken in memory and renews this replica's time (the ping). */
  flush(): Promise<void> {
    if (this.#timer === undefined && !this.#closed) this.#start();
    this.#pinging ??= this.#ping().finally(() => {
      this.#pinging = undefined;
    });
    return this.#pinging;
  }

  /** A ping begun after this call: it carries every step counted before it. */
  async #freshFlush(): Promise<void> {
    await this.#pinging?.catch(() => undefined);
    await this.flush();
  }

  /**
   * Sends the drop `token` with `send`. When that fails, the drop may still have been
   * committed (the connection lost after the commit): the failure is answered only once
   * no cache anywhere can still hold the session, VALID_MS from now.
   */
  async whileDropping<T>(token: number, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      this.#waiters.delete(token);
      await new Promise((resolve) => setTimeout(resolve, VALID_MS));
      throw error;
    }
  }

  /**
   * Every replica's cache forgets the session and writes the steps it counted of it;
   * resolves when all have (or have passed their time). For a read of the session that
   * must count every step answered so far.
   */
  async gather(agentName: string, sessionId: string): Promise<void> {
    const drop = this.dropMessage(agentName, sessionId);
    await this.whileDropping(drop.token, () => this.database.query('SELECT pg_notify($1, $2)', [SESSION_CACHE_CHANNEL, drop.payload]));
    await Promise.all([this.dropped(agentName, sessionId, drop.token), this.#freshFlush()]);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#usableUntil = 0;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.#pinging;
    if (this.#timer !== undefined) {
      await this.#ping().catch(() => undefined);
      await this.database.query('DELETE FROM session_cachers WHERE replica = $1', [this.replica]).catch(() => undefined);
    }
    await this.#listener.close();
  }

  #start(): void {
    this.#listener.subscribe((m) => this.#heard(m));
    this.#timer = setInterval(() => void this.flush().catch(() => undefined), PING_EVERY_MS);
    this.#timer.unref();
    // A ping begun now that LISTEN is in effect (one under way may predate it: it lets the cache answer no step).
    void this.#listener.listening().then(() => this.#freshFlush().catch(() => undefined));
  }

  async #ping(): Promise<void> {
    this.#sweep();
    const entries = this.#dirty;
    this.#dirty = [];
    // One row per session and epoch: an UPDATE ... FROM counts a row once however many rows match it.
    const rows = new Map<string, { a: string; s: string; e: number; n: number; t: number }>();
    for (const e of entries) {
      e.dirty = false;
      const key = `${e.agentName}\u0000${e.sessionId}\u0000${e.step.epoch}`;
      const row = rows.get(key);
      if (row === undefined) rows.set(key, { a: e.agentName, s: e.sessionId, e: e.step.epoch, n: e.pending, t: e.lastSeen });
      else {
        row.n += e.pending;
        row.t = Math.max(row.t, e.lastSeen);
      }
      e.pending = 0;
    }
    const n = ++this.#pingCount;
    const validMs = this.#listening ? VALID_MS : 0;
    // Only a ping that listed this replica for VALID_MS may let its cache answer once heard
    // back: one sent before LISTEN took effect can commit after it and be heard, while its
    // row told adders there was no cache here to wait for.
    const sentAt = performance.now();
    // A ping not heard back within VALID_MS can no longer let the cache answer: forgotten,
    // so that a listener cut for hours does not hold a ping a second.
    for (const [k, at] of this.#pingsSent) {
      if (sentAt - at < VALID_MS) break;
      this.#pingsSent.delete(k);
    }
    if (validMs > 0) this.#pingsSent.set(n, sentAt);
    const list = [...rows.values()];
    try {
      await this.database.prepared('guard_session_ping', 'SELECT session_ping($1, $2, $3, $4, $5, $6, $7, $8)', [
        list.map((r) => r.a),
        list.map((r) => r.s),
        list.map((r) => r.e),
        list.map((r) => r.n),
        list.map((r) => r.t),
        this.replica,
        validMs,
        JSON.stringify({ k: 'ping', from: this.replica, n }),
      ]);
    } catch (error) {
      // Not written: the counts go with the next ping.
      this.#pingsSent.delete(n);
      for (const r of list) this.#restore(r.a, r.s, r.e, r.n, r.t);
      throw error;
    }
  }

  /** Forgets entries too old to answer (their pending steps, if any, are in #dirty). */
  #sweep(): void {
    for (const [agentName, sessions] of this.#entries) {
      for (const [sessionId, e] of sessions) if (this.#latest - e.readAt >= CACHE_MS) sessions.delete(sessionId);
      if (sessions.size === 0) this.#entries.delete(agentName);
    }
  }

  #restore(agentName: string, sessionId: string, epoch: number, steps: number, lastSeen: number): void {
    // Only written, never answered (it is not among the entries): its labels and since are not read.
    const entry: Entry = { agentName, sessionId, step: { labels: new Set(), epoch, since: 0 }, readAt: lastSeen, pending: steps, lastSeen, dirty: true };
    this.#dirty.push(entry);
  }

  #heard(m: Message): void {
    switch (m.k) {
      case 'drop':
        this.#forget(m.a, m.s);
        // Its own drop too: a label statement whose client gave up (an error, a timeout) may
        // still commit, and this replica's cache must not hide the label it stored.
        if (m.from === this.replica) return;
        // Acknowledged once the steps counted here are written too: a GET of the session
        // after the acknowledgements counts every step answered before (readSession).
        void this.#freshFlush()
          .catch(() => undefined)
          .then(() => this.database.query('SELECT pg_notify($1, $2)', [SESSION_CACHE_CHANNEL, JSON.stringify({ k: 'ack', to: m.from, from: this.replica, t: m.t })]))
          .catch(() => undefined);
        return;
      case 'ack': {
        if (m.to !== this.replica) return;
        const waiter = this.#waiters.get(m.t);
        if (waiter === undefined) return;
        waiter.acked.add(m.from);
        this.#settle(m.t, waiter);
        return;
      }
      case 'ping': {
        if (m.from !== this.replica) return;
        const sentAt = this.#pingsSent.get(m.n);
        for (const k of this.#pingsSent.keys()) if (k <= m.n) this.#pingsSent.delete(k);
        if (sentAt !== undefined && !this.#closed) this.#usableUntil = Math.max(this.#usableUntil, sentAt + VALID_MS - VALID_MARGIN_MS);
        return;
      }
      case 'listening':
        // Drops sent while the listener was away are lost: nothing cached before is trusted.
        this.#listening = true;
        this.#generation++;
        this.#entries.clear();
        return;
      case 'other':
        return;
    }
  }

  #settle(token: number, waiter: Waiter): void {
    if (waiter.holders !== null && waiter.holders.every((r) => waiter.acked.has(r))) {
      this.#waiters.delete(token);
      waiter.done();
    }
  }

  #forget(agentName: string, sessionId: string): void {
    this.#generation++;
    this.#entries.get(agentName)?.delete(sessionId);
  }
}
