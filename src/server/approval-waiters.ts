/**
 * Long-polls of `GET /approvals/{id}/wait`: answered as soon as the approval is decided.
 * A decision made through this replica wakes its waiters at once; one made through another
 * replica is seen by looking at the store every GUARD_APPROVAL_POLL_MS, and expiry by a
 * timer at `expires_at`.
 */
import type { ApprovalRecord } from '../model/index.js';
import type { Store } from '../store/types.js';

type Waiter = (approval: ApprovalRecord) => void;

export class ApprovalWaiters {
  readonly #waiting = new Map<string, Set<Waiter>>();
  readonly #closing = new Set<() => void>();

  constructor(
    private readonly store: Pick<Store, 'getApproval'>,
    private readonly pollMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Wakes the waiters of a decided approval (a decision made here). */
  notify(approval: ApprovalRecord): void {
    if (approval.status === 'pending') return;
    const waiters = this.#waiting.get(approval.id);
    if (waiters === undefined) return;
    this.#waiting.delete(approval.id);
    for (const w of waiters) w(approval);
  }

  /**
   * The approval once it is no longer pending, or as it is after `timeoutMs`; null when
   * the id is unknown.
   */
  async wait(id: string, timeoutMs: number): Promise<ApprovalRecord | null> {
    const first = await this.store.getApproval(id, this.now());
    if (first === null || first.status !== 'pending') return first;
    return new Promise<ApprovalRecord>((resolve) => {
      let latest = first;
      let done = false;
      const timers: NodeJS.Timeout[] = [];
      const finish = (approval: ApprovalRecord) => {
        if (done) return;
        done = true;
        for (const t of timers) clearTimeout(t);
        const set = this.#waiting.get(id);
        set?.delete(finish);
        if (set?.size === 0) this.#waiting.delete(id);
        this.#closing.delete(close);
        resolve(approval);
      };
      const close = () => finish(latest);
      let set = this.#waiting.get(id);
      if (set === undefined) this.#waiting.set(id, (set = new Set()));
      set.add(finish);
      this.#closing.add(close);
      timers.push(setTimeout(() => finish(latest), timeoutMs));
      // Expiry reads as expired at once, without waiting for a poll.
      const untilExpiry = Date.parse(first.expires_at) - this.now();
      if (untilExpiry < timeoutMs) timers.push(setTimeout(() => finish({ ...latest, status: latest.status === 'pending' ? 'expired' : latest.status }), Math.max(0, untilExpiry)));
      const poll = () => {
        if (done) return;
        this.store.getApproval(id, this.now()).then(
          (current) => {
            if (current === null) return finish(latest);
            latest = current;
            if (current.status !== 'pending') finish(current);
            else if (!done) timers.push(setTimeout(poll, this.pollMs));
          },
          () => {
            // A store that fails is tried again; the long-poll ends at its timeout anyway.
            if (!done) timers.push(setTimeout(poll, this.pollMs));
          },
        );
      };
      timers.push(setTimeout(poll, this.pollMs));
    });
  }

  /** Answers every waiting request with the approval as last seen (server shutdown). */
  close(): void {
    for (const close of [...this.#closing]) close();
  }
}
