/**
 * Batches the observability events of in-process evaluations and posts them to
 * `POST /observability/events`: when `batchSize` events are waiting, every
 * `intervalMs`, and on shutdown. A failed send keeps the events for the next try, up to
 * `maxBuffered` (the oldest are dropped first), so a long outage cannot grow memory.
 */
import { randomUUID } from 'node:crypto';
import type { ControlExecution } from '../engine/api.js';
import type { ObservabilityEvent, Stage, Step } from '../model/index.js';

/** The API accepts 1..1000 events per request. */
export const MAX_EVENTS_PER_REQUEST = 1000;

export interface EventSink {
  /** Sends events, each serialised already (GuardClient.ingestEventsJson). */
  ingestEventsJson(events: readonly string[]): Promise<unknown>;
}

export interface EventBatcherOptions {
  batchSize: number;
  intervalMs: number;
  maxBuffered: number;
  onError: (error: unknown, pending: number) => void;
}

export class EventBatcher {
  /**
   * Each event as its JSON text, made when it is pushed, so that a send only joins them:
   * serialising 1,000 queued objects held the event loop 1.0 ms in one go, joining takes 0.2 ms.
   */
  #queue: string[] = [];
  #sending: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #soon: NodeJS.Immediate | null = null;
  #dropped = 0;
  #sent = 0;

  constructor(
    private readonly sink: EventSink,
    private readonly options: EventBatcherOptions,
  ) {
    if (options.intervalMs > 0) {
      this.#timer = setInterval(() => void this.flush(), options.intervalMs);
      // Events must never keep an agent process alive after its work is done.
      this.#timer.unref();
    }
  }

  get pending(): number {
    return this.#queue.length;
  }

  /** Events lost because the buffer was full during an outage. */
  get dropped(): number {
    return this.#dropped;
  }

  get sent(): number {
    return this.#sent;
  }

  push(events: ObservabilityEvent[]): void {
    for (const event of events) this.#queue.push(JSON.stringify(event));
    this.#trim();
    if (this.#queue.length >= this.options.batchSize) this.#flushSoon();
  }

  /** Sends what is queued; concurrent calls share one send. Never rejects. */
  flush(): Promise<void> {
    if (this.#sending) return this.#sending;
    if (this.#queue.length === 0) return Promise.resolve();
    this.#sending = this.#drain().finally(() => {
      this.#sending = null;
    });
    return this.#sending;
  }

  /** Stops the timer and sends everything still queued (one attempt). */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#soon) clearImmediate(this.#soon);
    this.#soon = null;
    await this.#sending;
    await this.flush();
  }

  /**
   * A full batch is sent once the check that filled it has returned: posting it inside
   * the check held the caller's step (an MCP gateway's answer) until the request was
   * written, 5% of the gateway's busy time, all on every fifth tools/call (batches of 100).
   */
  #flushSoon(): void {
    if (this.#soon) return;
    this.#soon = setImmediate(() => {
      this.#soon = null;
      void this.flush();
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, MAX_EVENTS_PER_REQUEST);
      try {
        await this.sink.ingestEventsJson(batch);
        this.#sent += batch.length;
      } catch (error) {
        // Put them back in front: order is kept and the next flush retries them.
        this.#queue.unshift(...batch);
        this.#trim();
        this.options.onError(error, this.#queue.length);
        return;
      }
    }
  }

  #trim(): void {
    const over = this.#queue.length - this.options.maxBuffered;
    if (over > 0) {
      this.#queue.splice(0, over);
      this.#dropped += over;
    }
  }
}

export interface EventContext {
  agentName: string;
  step: Step;
  stage: Stage;
  traceId: string;
  spanId: string;
  timestamp: string;
  /** The store revision of the control set evaluated, when the server said (GET /agents/{name}/controls). */
  setRevision: number | null;
  /** The step's session (CheckOptions.sessionId), null when it has none. */
  sessionId?: string | null;
}

/** One event per control the engine ran in-process for this step. */
export function eventsOf(executions: readonly ControlExecution[], ctx: EventContext): ObservabilityEvent[] {
  return executions.map((e) => ({
    control_execution_id: randomUUID(),
    trace_id: ctx.traceId,
    span_id: ctx.spanId,
    agent_name: ctx.agentName,
    control_id: e.control_id,
    control_name: e.control_name,
    check_stage: ctx.stage,
    applies_to: ctx.step.type,
    action: e.action,
    matched: e.matched,
    confidence: Math.min(1, Math.max(0, e.confidence)),
    timestamp: ctx.timestamp,
    execution_duration_ms: Math.max(0, e.duration_ms),
    evaluator_name: e.evaluator_name || null,
    selector_path: e.selector_path || null,
    error_message: e.error_message,
    metadata: { source: 'sdk', step_name: ctx.step.name },
    mode: e.mode ?? 'enforce',
    set_revision: ctx.setRevision,
    session_id: ctx.sessionId ?? null,
    ...(e.selector_missing === true && { selector_missing: true }),
  }));
}
