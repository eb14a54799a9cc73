/**
 * Batches the observability events of in-process evaluations and posts them to
 * `POST /observability/events`: when `batchSize` events are waiting, every
 * `intervalMs`, and on shutdown. A failed send keeps the events for the next try, up to
 * `maxBuffered` (the oldest are dropped first), so a long outage cannot grow memory. Events
 * the server refuses as invalid (422 naming `events[i]`) are let go and the rest sent: no
 * try can make the server take them, and kept in front they held back every later event.
 */
import { randomUUID } from 'node:crypto';
import { ApiError } from '../errors.js';
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
  /** Events the server refused as invalid were let go (`refused` of them); the rest were sent or kept. */
  onRefused?: (error: ApiError, refused: number) => void;
  /** Events rolled up elsewhere (NonMatchTally.drain), taken into the queue by each flush of everything. */
  takeRolledUp?: () => string[];
}

export class EventBatcher {
  /**
   * Each event as its JSON text, made when it is pushed, so that a send only joins them:
   * serialising 1,000 queued objects held the event loop 1.0 ms in one go, joining takes 0.2 ms.
   */
  #queue: string[] = [];
  /**
   * Events before this index in #queue are gone (sent or dropped): taken by moving it, not by
   * splicing the array's front. With the buffer full during an outage, every check's events
   * dropped as many of the oldest: a splice of a 10,000-event queue per check.
   * 0.10 of the time per check with the buffer full (0.40-0.45 against 3.5-4.5 µs; 20 events a check, maxBuffered 10,000).
   */
  #head = 0;
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
    return this.#queue.length - this.#head;
  }

  /** Events lost because the buffer was full during an outage. */
  get dropped(): number {
    return this.#dropped;
  }

  get sent(): number {
    return this.#sent;
  }

  push(events: ObservabilityEvent[]): void {
    this.pushJson(events.map((event) => JSON.stringify(event)));
  }

  /** Events already serialised (eventJsonOf). */
  pushJson(events: readonly string[]): void {
    for (const event of events) this.#queue.push(event);
    this.#trim();
    if (this.pending >= this.options.batchSize) this.#flushSoon();
  }

  /** Sends what is queued; concurrent calls share one send. Never rejects. */
  flush(): Promise<void> {
    return this.#flush(true);
  }

  /** Sends full batches, and first (`all`) whatever is queued now, however few. */
  #flush(all: boolean): Promise<void> {
    // A full batch's send in flight sends full batches only: an asked flush waits for it, then sends the rest.
    if (this.#sending) return all ? this.#sending.then(() => this.#flush(true)) : this.#sending;
    if (all && this.options.takeRolledUp) {
      const rolled = this.options.takeRolledUp();
      if (rolled.length > 0) this.pushJson(rolled);
    }
    if (this.pending === 0 || (!all && this.pending < this.options.batchSize)) return Promise.resolve();
    this.#sending = this.#drain(all ? this.pending : 0).finally(() => {
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
      void this.#flush(false);
    });
  }

  /**
   * Sends the `owed` events that were queued when the flush was asked, then goes on only
   * with full batches: sending on whatever came in meanwhile made a busy gateway post a few
   * dozen events after every few calls, never its 1,000 (494 posts for 1,300 tools/call of
   * 20 events); the rest goes with the next full batch, the interval or close.
   * 0.40-0.47 of the MCP gateway's CPU per tools/call (stdio; HTTP face 0.76-0.84; 2 interleaved rounds, 20 sdk controls).
   */
  async #drain(owed: number): Promise<void> {
    while (this.pending > 0 && (owed > 0 || this.pending >= this.options.batchSize)) {
      const batch = this.#take(MAX_EVENTS_PER_REQUEST);
      owed -= batch.length;
      try {
        await this.sink.ingestEventsJson(batch);
        this.#sent += batch.length;
      } catch (error) {
        const refused = refusedIndices(error, batch.length);
        if (refused !== null) {
          this.#dropped += refused.size;
          this.options.onRefused?.(error as ApiError, refused.size);
          const rest = batch.filter((_, i) => !refused.has(i));
          this.#queue = rest.concat(this.#queue.slice(this.#head));
          this.#head = 0;
          owed += rest.length;
          continue;
        }
        // Put them back in front: order is kept and the next flush retries them.
        this.#queue = batch.concat(this.#queue.slice(this.#head));
        this.#head = 0;
        this.#trim();
        this.options.onError(error, this.pending);
        return;
      }
    }
  }

  /** The oldest `count` events (fewer when fewer wait), out of the queue. */
  #take(count: number): string[] {
    const taken = this.#queue.slice(this.#head, this.#head + count);
    this.#head += taken.length;
    this.#compact();
    return taken;
  }

  #trim(): void {
    const over = this.pending - this.options.maxBuffered;
    if (over > 0) {
      this.#head += over;
      this.#dropped += over;
      this.#compact();
    }
  }

  /** Lets go of the gone events once they are half the array: a live event is copied once per as many gone ones. */
  #compact(): void {
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head > this.#queue.length / 2) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }
}

/**
 * The events of a batch of `size` that the server refused as invalid: a 422 whose every
 * error names one of them (`events[3].count`). Null for any other failure, which a later
 * try may get past (an outage, a key not yet deployed), and for a 422 of the batch as a
 * whole, which names no event to let go.
 */
export function refusedIndices(error: unknown, size: number): ReadonlySet<number> | null {
  if (!(error instanceof ApiError) || error.status !== 422) return null;
  const fields = error.problem?.errors ?? [];
  const indices = new Set<number>();
  for (const { field } of fields) {
    const named = /^events\[(\d+)\]/.exec(field);
    const index = named ? Number(named[1]) : NaN;
    if (!(index < size)) return null;
    indices.add(index);
  }
  return indices.size > 0 ? indices : null;
}

export interface EventContext {
  agentName: string;
  step: Pick<Step, 'type' | 'name'>;
  stage: Stage;
  traceId: string;
  spanId: string;
  timestamp: string;
  /** The store revision of the control set evaluated, when the server said (GET /agents/{name}/controls). */
  setRevision: number | null;
  /** The step's session (CheckOptions.sessionId), null when it has none. */
  sessionId?: string | null;
}

/**
 * One event per control the engine ran in-process for this step, as the JSON text of an
 * ObservabilityEvent; with `count`, each stands for that many non-matches (NonMatchTally). Written straight to text: the fields the step's events share are
 * serialised once per check, those of a control once while it stays the same
 * (controlPartOf), and no event object is made to be serialised and dropped.
 * The control's part kept: 0.84 of the MCP gateway's instructions per tools/call (1.24M against 1.48M; callgrind, 20 sdk controls, calls 500-1,500).
 */
export function eventJsonOf(executions: readonly ControlExecution[], ctx: EventContext, count = 1): string[] {
  const json = JSON.stringify;
  const id = executionIds(executions.length);
  const shared =
    `"trace_id":${json(ctx.traceId)},"span_id":${json(ctx.spanId)},"agent_name":${json(ctx.agentName)},` +
    `"check_stage":${json(ctx.stage)},"applies_to":${json(ctx.step.type)},"timestamp":${json(ctx.timestamp)},` +
    `"metadata":${json({ source: 'sdk', step_name: ctx.step.name })},"set_revision":${json(ctx.setRevision ?? null)},"session_id":${json(ctx.sessionId ?? null)}`;
  return executions.map(
    (e, i) =>
      `{"control_execution_id":"${id(i)}",${shared}${controlPartOf(e)},"matched":${e.matched ? 'true' : 'false'},` +
      `"confidence":${numberText(Math.min(1, Math.max(0, e.confidence)))},"execution_duration_ms":${numberText(Math.max(0, e.duration_ms))},` +
      `"error_message":${e.error_message == null ? 'null' : json(e.error_message)}${e.selector_missing === true ? ',"selector_missing":true' : ''}` +
      `${count > 1 ? `,"count":${count}` : ''}}`,
  );
}

/** As JSON.stringify writes a number (NaN and the infinities as null), without its call. */
function numberText(n: number): string {
  return Number.isFinite(n) ? `${n}` : 'null';
}

interface ControlPart {
  name: string;
  action: string;
  evaluator: string;
  selector: string;
  mode: string | undefined;
  text: string;
}

/** By control id: what an event says of its control, rewritten when the control changes. */
const controlParts = new Map<number, ControlPart>();
/** Ids seen by one process stay few (an agent's controls); past this the parts are dropped and made again. */
const MAX_CONTROL_PARTS = 4096;

function controlPartOf(e: ControlExecution): string {
  const part = controlParts.get(e.control_id);
  if (part && part.name === e.control_name && part.action === e.action && part.evaluator === e.evaluator_name && part.selector === e.selector_path && part.mode === e.mode) {
    return part.text;
  }
  const json = JSON.stringify;
  const text =
    `,"control_id":${json(e.control_id)},"control_name":${json(e.control_name)},"action":${json(e.action)},` +
    `"evaluator_name":${json(e.evaluator_name || null)},"selector_path":${json(e.selector_path || null)},"mode":${json(e.mode ?? 'enforce')}`;
  if (controlParts.size >= MAX_CONTROL_PARTS) controlParts.clear();
  controlParts.set(e.control_id, { name: e.control_name, action: e.action, evaluator: e.evaluator_name, selector: e.selector_path, mode: e.mode, text });
  return text;
}

/**
 * Ids for one check's events: a random UUID for the check, each event's the same with its
 * index in the last three hex digits (still a version 4 UUID, and unique: 110 random bits
 * per check), so that a check draws and formats one UUID, not one per control.
 * 0.89 of the MCP gateway's bytes allocated per tools/call (74 against 83 KB; stdio, 20 sdk controls, sampling heap profile).
 */
function executionIds(count: number): (index: number) => string {
  if (count > 0x1000) return () => randomUUID();
  const stem = randomUUID().slice(0, 33);
  return (index) => stem + (0x1000 + index).toString(16).slice(1);
}
