/**
 * Sessions of one server, in memory (exact: JavaScript runs one step's begin at a time)
 * and written through to the SQLite file when there is one, so that they survive a
 * restart: a new session and each added label at once (a label joins the session once
 * it is written), the step counts and last-seen times of busy sessions once a second
 * (TOUCH_EVERY_MS) in one transaction, so a step costs no write of its own. At most
 * `sessionMax` sessions are held: a step that would start a new one beyond is refused (the caller decides what that means for the step: docs/sessions.md),
 * and a held session is never dropped before its TTL, so no label a deny control depends
 * on disappears to make room.
 */
import { monotonicNow } from '../clock.js';
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
  /** Steps taken since its row was last written: it is in #touched. */
  touched: boolean;
  /** Dropped (expired, or replaced by the session begun again): its row is not written again. */
  gone: boolean;
}

/** A full server sweeps idle sessions at most this often, so a flood of new ids cannot make each refusal a full scan. */
const SWEEP_EVERY_MS = 1000;

/** How often the rows of sessions that took steps are written (their labels are written at once). */
const TOUCH_EVERY_MS = 1000;

export class MemorySessions implements SessionState {
  /**
   * By agent, then session id: a step looks its session up by the two strings it came
   * with, never building a combined key (a new string to hash on every step).
   */
  readonly #agents = new Map<string, Map<string, Entry>>();
  #size = 0;
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #touchTimer: NodeJS.Timeout | undefined;
  /** Sessions whose step count or last step changed since their row was written. */
  #touched: Entry[] = [];
  #lastSweep = 0;

  constructor(
    private readonly settings: SessionSettings,
    private readonly persistence: SessionRowStore | undefined,
    private readonly now: () => number = monotonicNow,
    /**
     * `by-caller`: no timers; whoever made it calls writeTouched() and sweep(). For the
     * instruction counts (bench/sessions.ts), which charge the once-a-second write at the
     * rate a full-speed server sees instead of once per second of a slowed-down server.
     */
    schedule: 'timers' | 'by-caller' = 'timers',
  ) {
    for (const s of persistence?.loadSessions(now() - settings.sessionTtlMs) ?? []) {
      const labels = new Map(s.labels.map((l) => [l.label, l]));
      this.#put({ ...s, labels, view: new Set(labels.keys()), touched: false, gone: false });
    }
    if (schedule === 'by-caller') return;
    this.#timer = setInterval(() => this.sweep(), 60_000);
    this.#timer.unref();
    this.#touchTimer = setInterval(() => this.writeTouched(), TOUCH_EVERY_MS);
    this.#touchTimer.unref();
  }

  begin(agentName: string, sessionId: string): SessionStep | null {
    const now = this.now();
    let entry = this.#agents.get(agentName)?.get(sessionId);
    let fresh = false;
    if (entry !== undefined && entry.last_seen <= now - this.settings.sessionTtlMs) {
      this.#drop(entry);
      entry = undefined;
    }
    if (entry === undefined) {
      if (this.#size >= this.settings.sessionMax && now - this.#lastSweep >= SWEEP_EVERY_MS) this.sweep();
      if (this.#size >= this.settings.sessionMax) return null;
      entry = { agent_name: agentName, session_id: sessionId, first_seen: now, last_seen: now, steps: 0, labels: new Map(), view: new Set(), touched: false, gone: false };
      this.#put(entry);
      fresh = true;
    }
    entry.steps++;
    if (now > entry.last_seen) entry.last_seen = now;
    if (fresh) {
      try {
        this.persistence?.saveSession(rowOf(entry), true);
      } catch (error) {
        // The step fails (a 5xx); the session is not kept without its row, or a label a
        // later step adds would be written for a session the file does not hold, and lost
        // with it on a restart before the once-a-second write.
        this.#drop(entry);
        throw error;
      }
    } else if (!entry.touched && this.persistence) {
      entry.touched = true;
      this.#touched.push(entry);
    }
    return { labels: entry.view, epoch: entry.first_seen };
  }

  add(agentName: string, sessionId: string, step: SessionStep, labels: readonly NewLabel[], stage: 'pre' | 'post', stepName: string): void {
    if (labels.length === 0) return;
    const entry = this.#agents.get(agentName)?.get(sessionId);
    // The session expired and started again since the step began: its labels are not the new session's.
    if (entry === undefined || entry.first_seen !== step.epoch) return;
    const added_at = this.now();
    const stored: StoredSessionLabel[] = [];
    for (const l of labels) {
      if (entry.labels.has(l.label)) continue;
      stored.push({ label: l.label, control_id: l.control_id, control_name: l.control_name, stage, step_name: stepName, added_at });
    }
    if (stored.length === 0) return;
    // Written before the labels join the session: a label that could not be stored is
    // neither answered nor applied (the step fails with a 5xx instead).
    this.persistence?.saveSessionLabels(agentName, sessionId, stored);
    for (const label of stored) entry.labels.set(label.label, label);
    entry.view = new Set(entry.labels.keys());
  }

  async info(agentName: string, sessionId: string): Promise<SessionInfo | null> {
    const entry = this.#agents.get(agentName)?.get(sessionId);
    if (entry === undefined || entry.last_seen <= this.now() - this.settings.sessionTtlMs) return null;
    return infoOf({ ...entry, labels: [...entry.labels.values()] }, this.settings.sessionTtlMs);
  }

  /** Writes the rows of sessions that took steps since the last write (a failure is retried next time). */
  writeTouched(): void {
    if (this.#touched.length === 0 || !this.persistence) return;
    const entries = this.#touched.filter((e) => !e.gone);
    try {
      this.persistence.touchSessions(entries.map(rowOf));
    } catch {
      // The file is busy or away: the rows stay touched for the next write. Dropped
      // sessions leave the list here, so a long outage holds at most the live ones.
      this.#touched = entries;
      return;
    }
    for (const e of this.#touched) e.touched = false;
    this.#touched = [];
  }

  /** Drops sessions idle past their TTL (and their rows). */
  sweep(): void {
    const now = this.now();
    this.#lastSweep = now;
    const before = now - this.settings.sessionTtlMs;
    for (const sessions of this.#agents.values()) {
      for (const entry of sessions.values()) if (entry.last_seen <= before) this.#drop(entry);
    }
    // The file judges expiry by the last-seen times it holds: a live session's newer step
    // is written first, or the delete would take its row and labels, and the next write
    // would put the row back without them. Rows the write could not reach wait too.
    this.writeTouched();
    if (this.#touched.length === 0) {
      try {
        this.persistence?.deleteExpiredSessions(before);
      } catch {
        // The file refuses writes (a lock held elsewhere, a full disk): its expired rows wait
        // for the next sweep, unread meanwhile (a restart loads live rows only). A throw here
        // would fail the step that swept at the bound and, from the timer, end the process.
      }
    }
  }

  get size(): number {
    return this.#size;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    clearInterval(this.#touchTimer);
    this.writeTouched();
  }

  #put(entry: Entry): void {
    let sessions = this.#agents.get(entry.agent_name);
    if (sessions === undefined) {
      sessions = new Map();
      this.#agents.set(entry.agent_name, sessions);
    }
    sessions.set(entry.session_id, entry);
    this.#size++;
  }

  /**
   * Forgets a session. A row of it waiting in #touched is not written afterwards: that
   * would write the old session over the row of one begun again under the same id.
   */
  #drop(entry: Entry): void {
    const sessions = this.#agents.get(entry.agent_name);
    if (sessions?.get(entry.session_id) !== entry) return;
    sessions.delete(entry.session_id);
    if (sessions.size === 0) this.#agents.delete(entry.agent_name);
    entry.gone = true;
    this.#size--;
  }
}

function rowOf(e: Entry) {
  return { agent_name: e.agent_name, session_id: e.session_id, first_seen: e.first_seen, last_seen: e.last_seen, steps: e.steps };
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
