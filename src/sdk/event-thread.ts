/**
 * An EventSink that posts from a worker thread of its own, for a process whose every
 * millisecond on the main thread is someone's wait (the MCP gateway). The EventBatcher
 * stays on the main thread and keeps its guarantees (bounded buffer, order, retry, sent on
 * close); only the request leaves it: joining 1,000 events, the POST through fetch and
 * writing its body to the socket (9% of the gateway's busy main thread in a CPU profile
 * with the in-thread client; figures in cli/commands/mcp-proxy.ts).
 *
 * The thread never keeps the process alive by itself: it is held (ref) only while a send
 * is in flight, as the socket of an in-thread fetch would be.
 */
import { Worker } from 'node:worker_threads';
import { IngestResultSchema } from '../client/schemas.js';
import { parseProblem } from '../client/transport.js';
import { ApiError } from '../errors.js';
import type { EventSink } from './events.js';

export interface EventThreadTarget {
  /** The full URL of `POST /api/v1/observability/events`. */
  url: string;
  apiKey?: string | undefined;
  timeoutMs: number;
}

interface Reply {
  id: number;
  error: string | null;
  /** The HTTP status of an answer that was an error, else null. */
  status: number | null;
  /** The answer's body, checked here as the in-thread client checks it (IngestResultSchema). */
  body: string;
}

/**
 * The thread's code, plain JavaScript evaluated as its own module: no file to find next to
 * the compiled one (the SDK is also bundled and run from sources in tests). Its request is
 * the one GuardClient.ingestEventsJson makes: same body, headers and time limit.
 */
const POSTER = `
const { parentPort, workerData } = require('node:worker_threads');
const { url, apiKey, timeoutMs } = workerData;
const headers = { accept: 'application/json', 'content-type': 'application/json' };
if (apiKey) headers['x-api-key'] = apiKey;
// A send's events come in slices (EVENTS_PER_MESSAGE); the request goes once the last is here.
const held = new Map();
parentPort.on('message', async ({ id, events: slice, last }) => {
  const events = (held.get(id) ?? []).concat(slice);
  if (!last) {
    held.set(id, events);
    return;
  }
  held.delete(id);
  let error = null;
  let status = null;
  let text = '';
  try {
    const response = await fetch(url, { method: 'POST', headers, body: '{"events":[' + events.join(',') + ']}', signal: AbortSignal.timeout(timeoutMs) });
    text = await response.text();
    if (!response.ok) {
      status = response.status;
      error = 'POST /observability/events answered ' + response.status + ': ' + text.slice(0, 300);
    }
  } catch (e) {
    const cause = e && e.cause && e.cause.code ? ' (' + e.cause.code + ')' : '';
    error = 'POST /observability/events failed: ' + (e && e.name === 'TimeoutError' ? 'no answer within ' + timeoutMs + ' ms' : String(e && e.message)) + cause;
  }
  parentPort.postMessage({ id, error, status, body: text });
});
`;

/** Events copied to the thread per message: a tenth of a full batch. */
const EVENTS_PER_MESSAGE = 100;

export class EventThreadSink implements EventSink {
  #worker: Worker | null = null;
  #next = 0;
  readonly #waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();

  /** Started at once: its start-up (tens of ms) comes before the first call, not inside one. */
  constructor(private readonly target: EventThreadTarget) {
    this.#start();
  }

  /** Resolves when the server took the events, rejects with why it did not (the batcher keeps them). */
  ingestEventsJson(events: readonly string[]): Promise<void> {
    const worker = this.#worker ?? this.#start();
    const id = ++this.#next;
    return new Promise<void>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      worker.ref();
      this.#hand(worker, id, events, 0);
    });
  }

  /**
   * Hands the thread a send's events from `from` on, a slice per turn of the event loop:
   * copying a message's strings to the thread holds this thread, and a full batch in one
   * message was a stall that every 50th tools/call of a gateway waited out.
   * Held per message: 1,000 events a median 1.3-3.5 ms, 100 events 0.17-0.18 ms (two runs of 2,000 stdio calls, loaded host); CPU per call the same within noise.
   */
  #hand(worker: Worker, id: number, events: readonly string[], from: number): void {
    // Settled meanwhile (closed, or the thread failed): the rest is not wanted.
    if (this.#worker !== worker || !this.#waiting.has(id)) return;
    const to = Math.min(events.length, from + EVENTS_PER_MESSAGE);
    worker.postMessage({ id, events: events.slice(from, to), last: to === events.length });
    if (to < events.length) setImmediate(() => this.#hand(worker, id, events, to));
  }

  /** Stops the thread; a send still in flight is rejected (its events stay with the batcher). */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    this.#failAll(new Error('the event thread was stopped'));
    if (worker) await worker.terminate();
  }

  #start(): Worker {
    const worker = new Worker(POSTER, { eval: true, workerData: { ...this.target } });
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const waiting = this.#waiting.get(reply.id);
      this.#waiting.delete(reply.id);
      if (this.#waiting.size === 0) worker.unref();
      if (!waiting) return;
      if (reply.status !== null) waiting.reject(new ApiError(reply.status, parseProblem(reply.body), 'POST', this.target.url));
      else if (reply.error !== null) waiting.reject(new Error(reply.error));
      else if (!isIngestResult(reply.body)) waiting.reject(new Error('POST /observability/events answered something that is not what the API promises'));
      else waiting.resolve();
    });
    // A thread that failed is started afresh on the next send; what it held is retried by the batcher.
    worker.on('error', (error) => this.#failAll(error));
    worker.on('exit', () => {
      if (this.#worker === worker) this.#worker = null;
      this.#failAll(new Error('the event thread stopped'));
    });
    this.#worker = worker;
    return worker;
  }

  #failAll(error: Error): void {
    for (const waiting of this.#waiting.values()) waiting.reject(error);
    this.#waiting.clear();
  }
}

function isIngestResult(body: string): boolean {
  try {
    return IngestResultSchema.safeParse(JSON.parse(body)).success;
  } catch {
    return false;
  }
}
