import { normaliseAgentName, type ControlRecord } from '../model/index.js';
import { StoreError, type Store } from '../store/types.js';
import { notFound } from './problem.js';

/**
 * Turns an agent's linked controls into whatever the evaluator runs (the engine's
 * compiled set); `revision` is the store revision they were read at (events name it).
 */
export type CompileFn<S> = (controls: ControlRecord[], revision: number) => S;

export interface ControlSetCacheOptions {
  /**
   * While the store is unreachable, how long a stale set is served before the next
   * rebuild is tried (default 1000 ms). Bounds the load a down database sees from us.
   */
  retryMs?: number;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * Every field is always present (undefined when empty) and none is ever deleted: an object
 * whose shape changes by `delete` falls back to a dictionary, several hundred bytes per
 * agent.
 */
interface Entry<S> {
  /** The last set built; current unless `stale`. */
  set: S | undefined;
  /** Invalidated: the next get rebuilds, but `set` stays as a fallback for outages. */
  stale: boolean;
  /** The build in flight; concurrent gets share it. */
  pending: Promise<S> | undefined;
  /** When the last rebuild failed because the store was unavailable (outage mode), else null. */
  failedAt: number | null;
}

/**
 * Keeps each agent's compiled control set in memory, so that evaluation in the steady
 * state reads nothing from the store. Every write that touches an agent's controls must
 * call `invalidate` (routes, hot reload, replica change notifications).
 *
 * A build that was running when its agent was invalidated is not kept as current: a
 * generation number per agent (and one for `invalidate('all')`) is compared when the
 * build ends, so a set compiled from rows read before a write can never be served as
 * current after it.
 *
 * Invalidation marks a set stale instead of dropping it. When the rebuild fails because
 * the store is unavailable (StoreError 'unavailable'), the stale set keeps being served:
 * evaluations go on through a database outage, and the set is rebuilt at most every
 * `retryMs` until the store answers again.
 */
export class ControlSetCache<S> {
  private readonly entries = new Map<string, Entry<S>>();
  private readonly generations = new Map<string, number>();
  private epoch = 0;
  private readonly retryMs: number;
  private readonly now: () => number;

  constructor(
    private readonly store: Pick<Store, 'agentControlSet'>,
    private readonly compile: CompileFn<S>,
    options: ControlSetCacheOptions = {},
  ) {
    this.retryMs = options.retryMs ?? 1000;
    this.now = options.now ?? Date.now;
  }

  /** The current set, or undefined when it must be built (lets the hot path skip an await). */
  peek(agentName: string): S | undefined {
    const entry = this.entries.get(agentName);
    return entry && !entry.stale ? entry.set : undefined;
  }

  /** The agent's compiled set; builds it once. Rejects with a 404 problem for an unknown agent. */
  get(agentName: string): Promise<S> {
    const name = normaliseAgentName(agentName);
    let entry = this.entries.get(name);
    if (entry?.set !== undefined && !entry.stale) return Promise.resolve(entry.set);
    if (entry?.set !== undefined && entry.failedAt !== null) {
      // Outage mode: answer from the stale set now; retry in the background, rate-limited.
      if (!entry.pending && this.now() - entry.failedAt >= this.retryMs) this.startBuild(name, entry).catch(() => undefined);
      return Promise.resolve(entry.set);
    }
    if (entry?.pending) return entry.pending;
    if (!entry) {
      entry = { set: undefined, stale: true, pending: undefined, failedAt: null };
      this.entries.set(name, entry);
    }
    return this.startBuild(name, entry);
  }

  /** Marks the sets of these agents (or of all agents) stale; the next get rebuilds from the store. */
  invalidate(agents: readonly string[] | 'all'): void {
    if (agents === 'all') {
      this.epoch++;
      for (const entry of this.entries.values()) this.markStale(entry);
      return;
    }
    for (const agent of agents) {
      const name = normaliseAgentName(agent);
      this.generations.set(name, (this.generations.get(name) ?? 0) + 1);
      const entry = this.entries.get(name);
      if (entry) this.markStale(entry);
    }
  }

  /**
   * Invalidations come from successful writes or from the database telling us about
   * them, so the store is reachable again: leave outage mode and rebuild on the next get.
   */
  private markStale(entry: Entry<S>): void {
    entry.stale = true;
    entry.failedAt = null;
  }

  /**
   * Hot reload's swap: builds these agents' sets from the store first, then installs all
   * of them in one synchronous step, so an evaluation sees the old set until the swap and
   * the new one after it, and no request pays for compiling. An agent written to by
   * someone else while we were building, or no longer registered, is only invalidated
   * (the next get rebuilds it). If reading or compiling fails, the agents are
   * invalidated and the error is thrown.
   */
  async refresh(agents: readonly string[]): Promise<void> {
    const names = [...new Set(agents.map(normaliseAgentName))];
    const startEpoch = this.epoch;
    const startGenerations = new Map(names.map((name) => [name, this.generations.get(name) ?? 0]));
    const built = new Map<string, S | null>();
    try {
      for (const name of names) {
        const read = await this.store.agentControlSet(name);
        built.set(name, read ? this.compile(read.controls, read.revision) : null);
      }
    } catch (error) {
      this.invalidate(names);
      throw error;
    }
    // From here to the end nothing awaits: every agent switches in the same tick.
    const untouched = this.epoch === startEpoch;
    for (const name of names) {
      const current = untouched && (this.generations.get(name) ?? 0) === startGenerations.get(name);
      // A new generation keeps any build still in flight (from older rows) from being current.
      this.generations.set(name, (this.generations.get(name) ?? 0) + 1);
      const set = built.get(name);
      if (current && set !== undefined && set !== null) {
        // A fresh entry, so a build in flight on the old one cannot overwrite it.
        this.entries.set(name, { set, stale: false, pending: undefined, failedAt: null });
      } else {
        const entry = this.entries.get(name);
        if (entry) this.markStale(entry);
      }
    }
  }

  /** How many agents have a current compiled set in memory (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const entry of this.entries.values()) if (entry.set !== undefined && !entry.stale) n++;
    return n;
  }

  /** How many agents are being served from a stale set because the store is unavailable. */
  get degraded(): number {
    let n = 0;
    for (const entry of this.entries.values()) if (entry.set !== undefined && entry.stale && entry.failedAt !== null) n++;
    return n;
  }

  private startBuild(name: string, entry: Entry<S>): Promise<S> {
    const pending = this.build(name, entry);
    entry.pending = pending;
    return pending;
  }

  private async build(name: string, entry: Entry<S>): Promise<S> {
    const startEpoch = this.epoch;
    const startGeneration = this.generations.get(name) ?? 0;
    const isCurrent = () => this.epoch === startEpoch && (this.generations.get(name) ?? 0) === startGeneration;
    const isOurs = () => this.entries.get(name) === entry && entry.pending !== undefined;
    try {
      const read = await this.store.agentControlSet(name);
      if (!read) throw notFound(`agent "${name}" is not registered; register it with POST /api/v1/agents/initAgent`);
      const set = this.compile(read.controls, read.revision);
      if (isOurs()) {
        // A set built from rows read before a later write is kept only as a fallback.
        entry.set = set;
        entry.stale = !isCurrent();
        entry.failedAt = null;
        entry.pending = undefined;
      }
      return set;
    } catch (error) {
      const ours = isOurs();
      if (ours) entry.pending = undefined;
      const fallback = entry.set;
      if (error instanceof StoreError && error.kind === 'unavailable' && fallback !== undefined) {
        entry.failedAt = this.now();
        return fallback;
      }
      // Other failures are not cached: the next request tries again.
      if (ours) this.entries.delete(name);
      throw error;
    }
  }
}
