import { normaliseAgentName, type ControlRecord } from '../model/index.js';
import type { Store } from '../store/types.js';
import { notFound } from './problem.js';

/** Turns an agent's linked controls into whatever the evaluator runs (the engine's compiled set). */
export type CompileFn<S> = (controls: ControlRecord[]) => S;

interface Entry<S> {
  /** Set once the build finished and was still current. */
  set?: S;
  /** The build in flight; concurrent gets share it. */
  pending?: Promise<S>;
}

/**
 * Keeps each agent's compiled control set in memory, so that evaluation in the steady
 * state reads nothing from the store. Every write that touches an agent's controls must
 * call `invalidate` (routes, hot reload, replica change notifications).
 *
 * A build that was running when its agent was invalidated is not kept: a generation
 * number per agent (and one for `invalidate('all')`) is compared when the build ends,
 * so a set compiled from rows read before a write can never be cached after it.
 */
export class ControlSetCache<S> {
  private readonly entries = new Map<string, Entry<S>>();
  private readonly generations = new Map<string, number>();
  private epoch = 0;

  constructor(
    private readonly store: Pick<Store, 'getAgent' | 'listAgentControls'>,
    private readonly compile: CompileFn<S>,
  ) {}

  /** The cached set, or undefined when it must be built (lets the hot path skip an await). */
  peek(agentName: string): S | undefined {
    return this.entries.get(agentName)?.set;
  }

  /** The agent's compiled set; builds it once. Rejects with a 404 problem for an unknown agent. */
  get(agentName: string): Promise<S> {
    const name = normaliseAgentName(agentName);
    const entry = this.entries.get(name);
    if (entry?.set !== undefined) return Promise.resolve(entry.set);
    if (entry?.pending) return entry.pending;
    const fresh: Entry<S> = {};
    fresh.pending = this.build(name, fresh);
    this.entries.set(name, fresh);
    return fresh.pending;
  }

  /** Forgets the sets of these agents (or of all agents); the next get rebuilds from the store. */
  invalidate(agents: readonly string[] | 'all'): void {
    if (agents === 'all') {
      this.epoch++;
      this.entries.clear();
      return;
    }
    for (const agent of agents) {
      const name = normaliseAgentName(agent);
      this.generations.set(name, (this.generations.get(name) ?? 0) + 1);
      this.entries.delete(name);
    }
  }

  /** How many agents have a compiled set in memory (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const entry of this.entries.values()) if (entry.set !== undefined) n++;
    return n;
  }

  private async build(name: string, entry: Entry<S>): Promise<S> {
    const startEpoch = this.epoch;
    const startGeneration = this.generations.get(name) ?? 0;
    const isCurrent = () =>
      this.epoch === startEpoch && (this.generations.get(name) ?? 0) === startGeneration && this.entries.get(name) === entry;
    try {
      const agent = await this.store.getAgent(name);
      if (!agent) throw notFound(`agent "${name}" is not registered; register it with POST /api/v1/agents/initAgent`);
      const controls = await this.store.listAgentControls(name);
      const set = this.compile(controls);
      if (isCurrent()) {
        entry.set = set;
        delete entry.pending;
      }
      return set;
    } catch (error) {
      // Failures are not cached: the next request tries again.
      if (isCurrent()) this.entries.delete(name);
      throw error;
    }
  }
}
