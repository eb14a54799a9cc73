/**
 * `consistency: exact` on PostgreSQL, with leases. Counting every step in the database
 * costs a round trip per step (per batch of a busy key), and a replica's steps wait for it.
 * Instead, a replica asks the database for room under a key's limit along with a step it
 * counts there: the room is counted at once, like the steps it stands for, and the replica
 * then hands it out to its next steps of that key without a round trip. Because a lease is
 * counted before it is used, the replicas together never admit more than the limit.
 *
 * What keeps it exact rather than merely safe:
 * - the database grants at most a quarter of the room left (counter_take_leased,
 *   migration 6), so leases shrink as the limit nears and end there;
 * - a replica uses a lease for LEASE_MS / 2 at most and then gives back what it did not
 *   use (the database takes it out of the bucket it went into);
 * - a step that only other replicas' unused leases keep out is not refused: the database
 *   answers "retry at the leases' end" and the step is counted again then, when those
 *   leases are back or have ended (a lease not given back by its end counts as spent,
 *   so a replica that died with a lease costs at most that lease, never an overshoot).
 *
 * Only a busy key asks for a lease (steps queued behind the one counted, or a lease used
 * just now); other keys' steps are counted one statement each. While the database grants
 * no lease to a busy key (its room is small), that key's steps are counted one statement
 * per batch as without leases, until LEASE_MS has passed.
 */
import type { CountAnswer, CountRequest, LeaseTerms, SharedCountAnswer, SharedCounterStore } from './types.js';

/** How long a granted lease stays counted as unused room another replica may wait for. */
export const LEASE_MS = 100;
/** A lease asks for room for this many steps like the one that asks. */
export const LEASE_STEPS = 64;

interface Lease {
  /** The step that asked: the lease serves steps of the same control terms. */
  terms: CountRequest;
  granted: number;
  /** Not handed out yet. */
  held: number;
  bucket: number;
  /** The key's sum after the asking step, the lease left out. */
  base: number;
  /** Used until then (the replica's clock, set to the database's), then given back. */
  until: number;
  timer: NodeJS.Timeout;
}

interface Waiting {
  request: CountRequest;
  deadline: number;
  resolve(answer: CountAnswer): void;
  reject(error: unknown): void;
}

interface KeyState {
  lease: Lease | null;
  /** Steps behind the step under way that asks for a lease, in arrival order. */
  queue: Waiting[];
  asking: boolean;
  /** No lease was granted: steps are counted in the database until then. */
  directUntil: number;
}

export class LeasedCounts {
  readonly #keys = new Map<string, KeyState>();

  constructor(
    private readonly shared: SharedCounterStore,
    private readonly now: () => number,
    /** Whether a new key of this control may be counted (its key cap: server-counters.ts). */
    private readonly allowNew: (controlId: number) => boolean,
    /** Longest a step may wait, retries behind other replicas' leases included (ms). */
    private readonly timeoutMs: number,
    /** How long a lease is counted as unused room (tests lengthen it); used for half of it. */
    private readonly leaseMs = LEASE_MS,
  ) {}

  count(request: CountRequest): CountAnswer | Promise<CountAnswer> {
    const id = `${request.counter}\u0000${request.key}`;
    let state = this.#keys.get(id);
    if (state === undefined) {
      state = { lease: null, queue: [], asking: false, directUntil: 0 };
      this.#keys.set(id, state);
    }
    const now = this.now();
    if (!state.asking && state.queue.length === 0) {
      const local = takeFromLease(state, request, now);
      if (local !== null) return local;
    }
    return new Promise<CountAnswer>((resolve, reject) => {
      state.queue.push({ request, deadline: now + this.timeoutMs, resolve, reject });
      this.#pump(id, state);
    });
  }

  /** Gives every lease back (best effort) and stops their timers. */
  async close(): Promise<void> {
    const releases: Array<Promise<unknown>> = [];
    for (const state of this.#keys.values()) {
      if (state.lease) releases.push(this.#giveBack(state.lease).catch(() => undefined));
      state.lease = null;
    }
    this.#keys.clear();
    await Promise.all(releases);
  }

  /** Serves the queue from the lease; then counts its head in the database, asking for a lease. */
  #pump(id: string, state: KeyState): void {
    if (state.asking) return;
    const now = this.now();
    while (state.queue.length > 0) {
      const local = takeFromLease(state, state.queue[0]!.request, now);
      if (local === null) break;
      state.queue.shift()!.resolve(local);
    }
    if (state.queue.length === 0) {
      if (state.lease === null) this.#keys.delete(id);
      return;
    }
    if (now < state.directUntil) {
      for (const step of state.queue.splice(0)) this.#countInDatabase(step, null, 0);
      return;
    }
    const head = state.queue.shift()!;
    const old = state.lease;
    state.lease = null;
    if (old) clearTimeout(old.timer);
    state.asking = true;
    // Only a busy key asks for a lease: one with steps waiting behind this one, or one
    // that used a lease just now. A key seen now and then (a user's occasional step) is
    // counted by one statement, without a lease to give back by a second one.
    const busy = state.queue.length > 0 || old !== null;
    const ask = busy ? head.request.amount * LEASE_STEPS : 0;
    this.shared.countShared(head.request, now, this.allowNew(head.request.control_id), this.#terms(old, ask)).then(
      (answer) => {
        state.asking = false;
        if (answer.granted !== undefined && answer.granted > 0) {
          state.lease = this.#lease(id, state, head.request, answer, now);
        } else if (busy) {
          state.directUntil = now + this.leaseMs;
        }
        this.#settle(head, answer);
        this.#pump(id, state);
      },
      (error: unknown) => {
        // The steps behind it waited for the same database: they fail with it, each
        // following its control's on_error, as the store's batches do.
        state.asking = false;
        head.reject(error);
        for (const step of state.queue.splice(0)) step.reject(error);
        if (state.lease === null) this.#keys.delete(id);
      },
    );
  }

  /** A step counted in the database without a lease; `release` gives one back on the way. */
  #countInDatabase(step: Waiting, release: Lease | null, ask: number): void {
    this.shared.countShared(step.request, this.now(), this.allowNew(step.request.control_id), this.#terms(release, ask)).then(
      (answer) => this.#settle(step, answer),
      (error: unknown) => step.reject(error),
    );
  }

  /** Answers a step, or counts it again after the leases that kept it out have ended. */
  #settle(step: Waiting, answer: SharedCountAnswer): void {
    if (answer.retryAt === undefined) {
      step.resolve({ used: answer.used, over: answer.over });
      return;
    }
    const now = this.now();
    const wait = Math.max(1, answer.retryAt - now + 1);
    if (now + wait > step.deadline) {
      step.reject(new Error(`counting timed out after ${this.timeoutMs} ms (waiting for other replicas' leases of this key)`));
      return;
    }
    setTimeout(() => this.#countInDatabase(step, null, 0), wait);
  }

  #lease(id: string, state: KeyState, asking: CountRequest, answer: SharedCountAnswer, now: number): Lease {
    const lease: Lease = {
      terms: asking,
      granted: answer.granted!,
      held: answer.granted!,
      bucket: answer.leaseBucket!,
      base: answer.used,
      until: now + this.leaseMs / 2,
      timer: undefined as unknown as NodeJS.Timeout,
    };
    // Given back at its end unless a step asking for the next one gives it back first.
    lease.timer = setTimeout(() => {
      if (state.lease !== lease) return;
      state.lease = null;
      void this.#giveBack(lease).catch(() => undefined);
      if (!state.asking && state.queue.length === 0) this.#keys.delete(id);
    }, this.leaseMs / 2);
    lease.timer.unref();
    return lease;
  }

  /** A statement that only gives `lease` back (an amount of 0 decides nothing). */
  #giveBack(lease: Lease): Promise<SharedCountAnswer> {
    clearTimeout(lease.timer);
    return this.shared.countShared({ ...lease.terms, amount: 0 }, this.now(), true, this.#terms(lease, 0));
  }

  #terms(release: Lease | null, ask: number): LeaseTerms {
    return {
      defer: true,
      release: release ? { granted: release.granted, unused: release.held, bucket: release.bucket } : null,
      ask,
      leaseMs: this.leaseMs,
    };
  }
}

/** The step's answer from the key's lease, or null when the lease cannot serve it. */
function takeFromLease(state: KeyState, request: CountRequest, now: number): CountAnswer | null {
  const lease = state.lease;
  if (lease === null || now >= lease.until || lease.held < request.amount || !sameTerms(lease.terms, request)) return null;
  lease.held -= request.amount;
  return { used: lease.base + lease.granted - lease.held, over: false };
}

/** Steps of the same control terms: a changed limit or window needs the database. */
function sameTerms(a: CountRequest, b: CountRequest): boolean {
  return a.control_id === b.control_id && a.window_ms === b.window_ms && a.max === b.max && a.kind === b.kind && a.always === b.always;
}
