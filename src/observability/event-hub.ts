import type { ApprovalNotice, EvaluationSummary, ReloadNotice } from '../model/index.js';
import { OBSERVABILITY_DEFAULTS } from './config.js';

type Decision = EvaluationSummary['decision'];

export interface StreamFilter {
  agent_name?: string | undefined;
  /** Only these final decisions; all when absent. */
  decisions?: ReadonlySet<Decision> | undefined;
  /** Only the steps of this session. */
  session_id?: string | undefined;
}

/** What the hub writes to: an HTTP response (node's ServerResponse satisfies it). */
export interface StreamSink {
  write(chunk: string): boolean;
  once(event: 'drain', listener: () => void): unknown;
  end(): unknown;
  destroy(): unknown;
}

export interface StreamSubscriber {
  readonly id: number;
  readonly filter: StreamFilter;
  /** Frames waiting for the socket to drain (bounded by the queue size). */
  readonly queued: number;
  /** Frames dropped since the last `lagged` notice. */
  readonly skipped: number;
  readonly waitingForDrain: boolean;
}

/** Why the hub dropped a subscriber: its queue overflowed, or its socket stayed blocked past the stall time. */
export type DropReason = 'behind' | 'stalled';

export interface EventHub {
  /** Null when the subscriber limit is reached. */
  subscribe(sink: StreamSink, filter: StreamFilter): StreamSubscriber | null;
  unsubscribe(subscriber: StreamSubscriber): void;
  publishEvaluation(summary: EvaluationSummary): void;
  publishReload(notice: ReloadNotice): void;
  /** `event: approval`, to the subscribers of its agent (or of every agent), whatever their decision filter. */
  publishApproval(notice: ApprovalNotice): void;
  /** Open subscribers; evaluations skip building summaries when it is 0. */
  readonly size: number;
  /** Subscribers dropped since the hub began, by reason (the `stream_subscribers_dropped_total` metric). */
  drops(): Readonly<Record<DropReason, number>>;
  subscribers(): readonly StreamSubscriber[];
  /** Ends every stream (server shutdown). */
  close(): void;
}

export interface EventHubOptions {
  heartbeatMs?: number;
  maxSubscribers?: number;
  queueSize?: number;
  stallMs?: number;
  now?: () => number;
}

export function sseFrame(event: string, data: unknown, id?: string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

class Subscriber implements StreamSubscriber {
  private queue: string[] = [];
  skipped = 0;
  waitingForDrain = false;
  stalledSince = 0;
  closed = false;

  constructor(
    readonly id: number,
    readonly filter: StreamFilter,
    private readonly sink: StreamSink,
    private readonly queueSize: number,
    private readonly now: () => number,
  ) {}

  get queued(): number {
    return this.queue.length;
  }

  /**
   * Writes now when the socket takes it; otherwise queues. A subscriber whose queue is
   * full has fallen behind by its socket's buffers and the whole queue: it is dropped
   * (closed) rather than kept, so an idle or stuck reader costs the evaluations nothing
   * further. Returns false when it was dropped.
   */
  send(frame: string): boolean {
    if (this.closed) return true;
    if (this.waitingForDrain) {
      if (this.queue.length >= this.queueSize) {
        this.destroy();
        return false;
      }
      this.queue.push(frame);
      return true;
    }
    this.write(frame);
    return true;
  }

  /** Heartbeats are only worth sending to a socket that keeps up. */
  ping(): void {
    if (!this.closed && !this.waitingForDrain) this.write(': ping\n\n');
  }

  isStalled(stallMs: number): boolean {
    return this.waitingForDrain && this.now() - this.stalledSince > stallMs;
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue = [];
    this.sink.end();
  }

  destroy(): void {
    this.closed = true;
    this.queue = [];
    this.sink.destroy();
  }

  private write(frame: string): void {
    if (this.sink.write(frame)) return;
    this.waitingForDrain = true;
    this.stalledSince = this.now();
    this.sink.once('drain', () => this.drained());
  }

  private drained(): void {
    this.waitingForDrain = false;
    if (this.closed) return;
    if (this.skipped > 0) {
      const skipped = this.skipped;
      this.skipped = 0;
      this.write(sseFrame('lagged', { skipped }));
    }
    while (!this.waitingForDrain && this.queue.length > 0) this.write(this.queue.shift()!);
  }
}

/**
 * Fan-out of live events to Server-Sent Events subscribers. Publishing is synchronous
 * and never waits for a subscriber: each has a small queue used only while its socket
 * is busy; a subscriber whose queue overflows is disconnected at once (it can reconnect),
 * and so is one whose socket stays blocked past `stallMs`. Drops are counted by reason.
 */
export function createEventHub(opts: EventHubOptions = {}): EventHub {
  const heartbeatMs = opts.heartbeatMs ?? OBSERVABILITY_DEFAULTS.streamHeartbeatSeconds * 1000;
  const maxSubscribers = opts.maxSubscribers ?? OBSERVABILITY_DEFAULTS.streamMaxSubscribers;
  const queueSize = opts.queueSize ?? OBSERVABILITY_DEFAULTS.streamQueueSize;
  const stallMs = opts.stallMs ?? OBSERVABILITY_DEFAULTS.streamStallMs;
  const now = opts.now ?? Date.now;
  const subs = new Set<Subscriber>();
  let nextId = 1;
  let timer: NodeJS.Timeout | null = null;
  const dropped: Record<DropReason, number> = { behind: 0, stalled: 0 };

  const remove = (sub: Subscriber) => {
    subs.delete(sub);
    if (subs.size === 0 && timer) {
      clearInterval(timer);
      timer = null;
    }
  };

  const drop = (sub: Subscriber, reason: DropReason) => {
    sub.destroy();
    remove(sub);
    dropped[reason]++;
  };

  const tick = () => {
    for (const sub of subs) {
      if (sub.isStalled(stallMs)) {
        drop(sub, 'stalled');
      } else {
        sub.ping();
      }
    }
  };

  const dropStalled = () => {
    for (const sub of subs) {
      if (sub.isStalled(stallMs)) drop(sub, 'stalled');
    }
  };

  return {
    get size() {
      return subs.size;
    },
    drops: () => ({ ...dropped }),
    subscribers: () => [...subs],
    subscribe(sink, filter) {
      if (subs.size >= maxSubscribers) return null;
      const sub = new Subscriber(nextId++, filter, sink, queueSize, now);
      subs.add(sub);
      if (!timer) {
        timer = setInterval(tick, heartbeatMs);
        timer.unref();
      }
      return sub;
    },
    unsubscribe(subscriber) {
      const sub = subscriber as Subscriber;
      sub.closed = true;
      remove(sub);
    },
    publishEvaluation(summary) {
      if (subs.size === 0) return;
      let frame: string | null = null;
      let sawStalled = false;
      for (const sub of subs) {
        const f = sub.filter;
        if (f.agent_name !== undefined && f.agent_name !== summary.agent_name) continue;
        if (f.decisions && !f.decisions.has(summary.decision)) continue;
        if (f.session_id !== undefined && f.session_id !== summary.session_id) continue;
        frame ??= sseFrame('evaluation', summary, summary.id);
        if (!sub.send(frame)) {
          remove(sub);
          dropped.behind++;
        } else if (sub.waitingForDrain) {
          sawStalled = true;
        }
      }
      if (sawStalled) dropStalled();
    },
    publishReload(notice) {
      if (subs.size === 0) return;
      const frame = sseFrame('reload', notice);
      for (const sub of subs) {
        if (!sub.send(frame)) {
          remove(sub);
          dropped.behind++;
        }
      }
    },
    publishApproval(notice) {
      if (subs.size === 0) return;
      const frame = sseFrame('approval', notice);
      for (const sub of subs) {
        if (sub.filter.agent_name !== undefined && sub.filter.agent_name !== notice.approval.agent_name) continue;
        if (!sub.send(frame)) {
          remove(sub);
          dropped.behind++;
        }
      }
    },
    close() {
      for (const sub of subs) sub.end();
      subs.clear();
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}
