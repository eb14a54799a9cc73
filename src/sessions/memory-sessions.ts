/**
 * Sessions of one server, in memory (exact: JavaScript runs one step's begin at a time)
 * and written through to the SQLite file when there is one, so that they survive a
 * restart: a new session and each added label at once, the step counts and last-seen
 * times of busy sessions once a second (TOUCH_EVERY_MS) in one transaction, so a step
 * costs no write of its own. At most `sessionMax` sessions are held: a step that would start a new one
 * beyond is refused (the caller decides what that means for the step: docs/sessions.md),
 * and a held session is never dropped before its TTL, so no label a deny control depends
 * on disappears to make room.
 */
import type { SessionInfo } from '../model/index.js';
import type { SessionRowStore, StoredSessionLabel } from '../store/types.js';
import type { NewLabel, SessionSettings, SessionState, SessionStep } from './types.js';

interface Entry {
  readonly agent_name: string;
  readonly session_id: string;
  first_seen: number;
  last_seen: number;
  steps: number;
  readonly labels: Map<string, StoredSessionLabel>;
  /** The label set a step reads; replaced (never changed) when labels are added. */
  view: ReadonlySet<string>;
}

/** A full server sweeps idle sessions at most this often, so a flood of new ids cannot make each refusal a full scan. */
const SWEEP_EVERY_MS = 1000;

/** How often the rows of sessions that took steps are written (their labels are written at once). */
const TOUCH_EVERY_MS = 1000;

export class MemorySessions implements SessionState {
  readonly #entries = new Map<string, Entry>();
  readonly #timer: NodeJS.Timeout;
  readonly #touchTimer: NodeJS.Timeout;
  /** Sessions whose step count or last step changed since their row was written. */
  readonly #touched = new Map<string, Entry>();
  #lastSweep = 0;

  constructor(
    private readonly settings: SessionSettings,
    private readonly persistence: SessionRowStore | undefined,
    private readonly now: () => number = Date.now,
  ) {
    for (const s of persistence?.loadSessions(now() - settings.sessionTtlMs) ?? []) {
      const labels = new Map(s.labels.map((l) => [l.label, l]));
      this.#entries.set(keyOf(s.agent_name, s.session_id), { ...s, labels, view: new Set(labels.keys()) });
    }
    this.#timer = setInterval(() => this.sweep(), 60_000);
    this.#timer.unref();
    this.#touchTimer = setInterval(() => this.writeTouched(), TOUCH_EVERY_MS);
    this.#touchTimer.unref();
  }

  begin(agentName: string, sessionId: string): SessionStep | null {
    const now = this.now();
    const id = keyOf(agentName, sessionId);
    let entry = this.#entries.get(id);
    let fresh = false;
    if (entry !== undefined && entry.last_seen <= now - this.settings.sessionTtlMs) {
      this.#entries.delete(id);
      entry = undefined;
    }
    if (entry === undefined) {
      if (this.#entries.size >= this.settings.sessionMax && now - this.#lastSweep >= SWEEP_EVERY_MS) this.sweep();
      if (this.#entries.size >= this.settings.sessionMax) return null;
      entry = { agent_name: agentName, session_id: sessionId, first_seen: now, last_seen: now, steps: 0, labels: new Map(), view: new Set() };
      this.#entries.set(id, entry);
      fresh = true;
    }
    entry.steps++;
    entry.last_seen = Math.max(entry.last_seen, now);
    if (fresh) this.persistence?.saveSession(rowOf(entry), true);
    else if (this.persistence) this.#touched.set(id, entry);
    return { labels: entry.view, epoch: entry.first_seen };
  }

  add(agentName: string, sessionId: string, step: SessionStep, labels: readonly NewLabel[], stage: 'pre' | 'post', stepName: string): void {
    if (labels.length === 0) return;
    const entry = this.#entries.get(keyOf(agentName, sessionId));
    // The session expired and started again since the step began: its labels are not the new session's.
    if (entry === undefined || entry.first_seen !== step.epoch) return;
    const added_at = this.now();
    const stored: StoredSessionLabel[] = [];
    for (const l of labels) {
      if (entry.labels.has(l.label)) continue;
      const label: StoredSessionLabel = { label: l.label, control_id: l.control_id, control_name: l.control_name, stage, step_name: stepName, added_at };
      entry.labels.set(l.label, label);
      stored.push(label);
    }
    if (stored.length === 0) return;
    entry.view = new Set(entry.labels.keys());
    this.persistence?.saveSessionLabels(agentName, sessionId, stored);
  }

  async info(agentName: string, sessionId: string): Promise<SessionInfo | null> {
    const entry = this.#entries.get(keyOf(agentName, sessionId));
    if (entry === undefined || entry.last_seen <= this.now() - this.settings.sessionTtlMs) return null;
    return infoOf({ ...entry, labels: [...entry.labels.values()] }, this.settings.sessionTtlMs);
  }

  /** Writes the rows of sessions that took steps since the last write (a failure is retried next time). */
  writeTouched(): void {
    if (this.#touched.size === 0 || !this.persistence) return;
    const rows = [...this.#touched.values()].map(rowOf);
    try {
      this.persistence.touchSessions(rows);
      this.#touched.clear();
    } catch {
      // The file is busy or away: the rows stay touched for the next write.
    }
  }

  /** Drops sessions idle past their TTL (and their rows). */
  sweep(): void {
    const now = this.now();
    this.#lastSweep = now;
    const before = now - this.settings.sessionTtlMs;
    for (const [id, entry] of this.#entries) {
      if (entry.last_seen > before) continue;
      this.#entries.delete(id);
      this.#touched.delete(id);
    }
    this.persistence?.deleteExpiredSessions(before);
  }

  get size(): number {
    return this.#entries.size;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    clearInterval(this.#touchTimer);
    this.writeTouched();
  }
}

function rowOf(e: Entry) {
  return { agent_name: e.agent_name, session_id: e.session_id, first_seen: e.first_seen, last_seen: e.last_seen, steps: e.steps };
}

function keyOf(agentName: string, sessionId: string): string {
  return `${agentName}\u0000${sessionId}`;
}

/** The GET answer: times as ISO text, labels in the order they were added. */
export function infoOf(
  s: { agent_name: string; session_id: string; first_seen: number; last_seen: number; steps: number; labels: StoredSessionLabel[] },
  ttlMs: number,
): SessionInfo {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    agent_name: s.agent_name,
    session_id: s.session_id,
    labels: [...s.labels].sort((a, b) => a.added_at - b.added_at).map((l) => ({ ...l, added_at: iso(l.added_at) })),
    steps: s.steps,
    first_seen: iso(s.first_seen),
    last_seen: iso(s.last_seen),
    expires_at: iso(s.last_seen + ttlMs),
  };
}
