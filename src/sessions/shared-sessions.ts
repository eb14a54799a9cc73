/**
 * Sessions on PostgreSQL, shared by the replicas (store/postgres/sessions.ts holds the
 * statements): every step reads and counts its session in the database, so a label added
 * through any replica decides at the very next step. Idle sessions are deleted, and the
 * count the bound is checked against recounted, every PRUNE_INTERVAL_MS; a replica
 * refusing a new session at the bound prunes at once (at most once a second), so that
 * expired sessions make room.
 *
 * Times (a step's, expiry, the prune's) are read on the database server's clock, not the
 * replica's: a replica whose clock runs ahead (a missed NTP step, a resumed VM) would
 * otherwise prune or restart another replica's live session early, dropping its labels,
 * and one running behind would write last-seen times that make sessions look idle longer.
 * The replica's clock (src/clock.ts, shared with its counters) is set to the
 * database's at start and again at each prune, and runs between on a monotonic clock: the
 * wall clock, stepped by NTP or by hand between prunes, would put the replica ahead until
 * the next prune and restart live sessions early. Until the clock was first set, a step
 * waits for it to be read, and fails if it cannot be: on the replica's own clock it could
 * restart another replica's live session.
 */
import { DatabaseClock, monotonicNow } from '../clock.js';
import type { SessionInfo } from '../model/index.js';
import type { SharedSessionStep, SharedSessionStore } from '../store/types.js';
import { infoOf } from './memory-sessions.js';
import type { NewLabel, SessionSettings, SessionState } from './types.js';

const PRUNE_INTERVAL_MS = 10_000;
const PRUNE_AT_BOUND_MS = 1000;

export class SharedSessions implements SessionState {
  readonly #timer: NodeJS.Timeout;
  #pruning: Promise<void> | undefined;
  #lastPrune = 0;
  readonly #clock: DatabaseClock;
  /** The prune at start, which sets the clock first when the database answers. */
  readonly #started: Promise<void>;
  /** A first read of the database's clock under way, which steps wait for. */
  #clockReading: Promise<void> | undefined;

  constructor(
    private readonly shared: SharedSessionStore,
    private readonly settings: SessionSettings,
    /** The replica's clock, or the local clock to set to the database's (a clock of its own). */
    clock: DatabaseClock | (() => number) = monotonicNow,
  ) {
    this.#clock = clock instanceof DatabaseClock ? clock : new DatabaseClock(() => shared.databaseTime(), clock);
    this.#timer = setInterval(() => void this.prune(), PRUNE_INTERVAL_MS);
    this.#timer.unref();
    this.#started = this.prune();
  }

  /** At once when the replica's cache holds the session (store/postgres/session-cache.ts). */
  begin(agentName: string, sessionId: string): SharedSessionStep | Promise<SharedSessionStep | null> {
    if (!this.#clock.isSet) return this.#firstClock().then(() => this.begin(agentName, sessionId));
    // The time is read at each try: after a prune it has moved on, and a session created with
    // the time of before it could already be past the limit of a prune running meanwhile.
    const attempt = () => {
      const now = this.now();
      return this.shared.beginSessionStep(agentName, sessionId, now, now - this.settings.sessionTtlMs, this.settings.sessionMax);
    };
    const begun = attempt();
    if (!(begun instanceof Promise)) return begun;
    return begun.then(async (step) => {
      if (step !== null || this.#clock.localNow() - this.#lastPrune < PRUNE_AT_BOUND_MS) return step;
      await this.prune();
      return attempt();
    });
  }

  /** `step` is one begin() answered: its epoch is named by the time it began too (SharedSessionStep). */
  async add(agentName: string, sessionId: string, step: SharedSessionStep, labels: readonly NewLabel[], stage: 'pre' | 'post', stepName: string): Promise<void> {
    if (labels.length === 0) return;
    const added_at = this.now();
    await this.shared.addSessionLabels(
      agentName,
      sessionId,
      step,
      labels.map((l) => ({ label: l.label, control_id: l.control_id, control_name: l.control_name, stage, step_name: stepName, added_at })),
    );
  }

  async info(agentName: string, sessionId: string): Promise<SessionInfo | null> {
    if (!this.#clock.isSet) await this.#firstClock();
    const s = await this.shared.readSession(agentName, sessionId, this.now() - this.settings.sessionTtlMs);
    return s === null ? null : infoOf(s, this.settings.sessionTtlMs);
  }

  /** Sets the clock to the database's, then deletes idle sessions; an outage is retried next time. */
  prune(): Promise<void> {
    this.#lastPrune = this.#clock.localNow();
    this.#pruning ??= this.#clock
      .read()
      .then(() => this.shared.pruneSessions(this.now() - this.settings.sessionTtlMs))
      .then(() => undefined)
      .catch(() => undefined)
      .finally(() => {
        this.#pruning = undefined;
      });
    return this.#pruning;
  }

  /** The time on the database's clock, as the replica last set it. */
  now(): number {
    return this.#clock.now();
  }

  /** After the prune at start, reads the clock if that prune could not (the database away); rejects while it cannot be. */
  #firstClock(): Promise<void> {
    this.#clockReading ??= this.#started.then(() => this.#clock.ready()).finally(() => {
      this.#clockReading = undefined;
    });
    return this.#clockReading;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#pruning;
  }
}
