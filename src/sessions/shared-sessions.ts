/**
 * Sessions on PostgreSQL, shared by the replicas (store/postgres/sessions.ts holds the
 * statements): every step reads and counts its session in the database, so a label added
 * through any replica decides at the very next step. Idle sessions are deleted, and the
 * count the bound is checked against recounted, every PRUNE_INTERVAL_MS; a replica
 * refusing a new session at the bound prunes at once (at most once a second), so that
 * expired sessions make room.
 */
import type { SessionInfo } from '../model/index.js';
import type { SharedSessionStore } from '../store/types.js';
import { infoOf } from './memory-sessions.js';
import type { NewLabel, SessionSettings, SessionState, SessionStep } from './types.js';

const PRUNE_INTERVAL_MS = 10_000;
const PRUNE_AT_BOUND_MS = 1000;

export class SharedSessions implements SessionState {
  readonly #timer: NodeJS.Timeout;
  #pruning: Promise<void> | undefined;
  #lastPrune = 0;

  constructor(
    private readonly shared: SharedSessionStore,
    private readonly settings: SessionSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.#timer = setInterval(() => void this.prune(), PRUNE_INTERVAL_MS);
    this.#timer.unref();
    void this.prune();
  }

  /** At once when the replica's cache holds the session (store/postgres/session-cache.ts). */
  begin(agentName: string, sessionId: string): SessionStep | Promise<SessionStep | null> {
    const now = this.now();
    const expiredBefore = now - this.settings.sessionTtlMs;
    const begun = this.shared.beginSessionStep(agentName, sessionId, now, expiredBefore, this.settings.sessionMax);
    if (!(begun instanceof Promise)) return begun;
    return begun.then(async (step) => {
      if (step !== null || now - this.#lastPrune < PRUNE_AT_BOUND_MS) return step;
      await this.prune();
      return this.shared.beginSessionStep(agentName, sessionId, now, expiredBefore, this.settings.sessionMax);
    });
  }

  async add(agentName: string, sessionId: string, step: SessionStep, labels: readonly NewLabel[], stage: 'pre' | 'post', stepName: string): Promise<void> {
    if (labels.length === 0) return;
    const added_at = this.now();
    await this.shared.addSessionLabels(
      agentName,
      sessionId,
      step.epoch,
      labels.map((l) => ({ label: l.label, control_id: l.control_id, control_name: l.control_name, stage, step_name: stepName, added_at })),
    );
  }

  async info(agentName: string, sessionId: string): Promise<SessionInfo | null> {
    const s = await this.shared.readSession(agentName, sessionId, this.now() - this.settings.sessionTtlMs);
    return s === null ? null : infoOf(s, this.settings.sessionTtlMs);
  }

  /** Deletes idle sessions; an outage is retried next time. */
  prune(): Promise<void> {
    this.#lastPrune = this.now();
    this.#pruning ??= this.shared
      .pruneSessions(this.now() - this.settings.sessionTtlMs)
      .then(() => undefined)
      .catch(() => undefined)
      .finally(() => {
        this.#pruning = undefined;
      });
    return this.#pruning;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#pruning;
  }
}
