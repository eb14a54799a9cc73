/**
 * A client for the live stream `GET /api/v1/observability/events/stream` (Server-Sent
 * Events). It reads the body of a plain `fetch` as it arrives, so it needs no EventSource
 * polyfill, and it owns the parts EventSource hides: the API key header, the
 * reconnect policy and a state a dashboard can always show.
 */
import {
  ApprovalNoticeSchema,
  EvaluationSummarySchema,
  ReloadNoticeSchema,
  type ApprovalNotice,
  type EvaluationSummary,
  type ReloadNotice,
} from '../model/stream.js';

/** One dispatched SSE message (comments and empty messages never reach here). */
export interface SseMessage {
  event: string;
  data: string;
  id: string | null;
}

/**
 * Incremental SSE parser (the WHATWG event-stream rules that matter here): lines end in
 * LF, CRLF or CR; `:` starts a comment; several `data:` lines join with LF; a blank line
 * dispatches. Chunks may split anywhere, even between CR and LF.
 */
export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private id: string | null = null;
  private sawCr = false;
  /** The `retry:` field, when the server sent one. */
  retryMs: number | null = null;
  /** Set by `id:` and kept across messages, as the spec asks; sent back as Last-Event-ID. */
  lastEventId: string | null = null;

  push(chunk: string): SseMessage[] {
    const out: SseMessage[] = [];
    let text = chunk;
    // A CR at the end of the previous chunk already ended a line; drop its LF.
    if (this.sawCr && text.startsWith('\n')) text = text.slice(1);
    this.sawCr = false;
    this.buffer += text;
    let start = 0;
    for (let i = 0; i < this.buffer.length; i++) {
      const ch = this.buffer.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      this.line(this.buffer.slice(start, i), out);
      if (ch === 13) {
        if (i + 1 < this.buffer.length) {
          if (this.buffer.charCodeAt(i + 1) === 10) i++;
        } else {
          this.sawCr = true;
        }
      }
      start = i + 1;
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** Forget a half-received message, as after a dropped connection. */
  reset(): void {
    this.buffer = '';
    this.event = '';
    this.data = [];
    this.sawCr = false;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      if (this.data.length > 0) {
        out.push({ event: this.event || 'message', data: this.data.join('\n'), id: this.id });
      }
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'event':
        this.event = value;
        break;
      case 'data':
        this.data.push(value);
        break;
      case 'id':
        if (!value.includes('\0')) {
          this.id = value;
          this.lastEventId = value;
        }
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
        break;
    }
  }
}

export type StreamState =
  | { kind: 'connecting'; attempt: number }
  | { kind: 'live'; since: number }
  | { kind: 'reconnecting'; attempt: number; retryAt: number; reason: string }
  | { kind: 'unauthorized'; status: number; message: string }
  | { kind: 'error'; message: string }
  | { kind: 'closed' };

export interface EventStreamHandlers {
  onEvaluation(summary: EvaluationSummary): void;
  onReload?(notice: ReloadNotice): void;
  /** An approval was asked, decided, used or expired (docs/approvals.md). */
  onApproval?(notice: ApprovalNotice): void;
  /** The server dropped `skipped` events because this client read too slowly. */
  onLagged?(skipped: number): void;
  onState?(state: StreamState): void;
  /** A message whose data did not parse or did not match the schema. */
  onInvalid?(message: SseMessage, reason: string): void;
}

export interface EventStreamOptions {
  /** The server's base URL, for example `http://127.0.0.1:8000`. */
  server: string;
  apiKey?: string;
  /** Server-side filters (query parameters of the stream). */
  agentName?: string;
  decision?: string;
  /** Only the steps of this session. */
  sessionId?: string;
  signal?: AbortSignal;
  /** First reconnect delay; doubles per failed attempt up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** No byte (not even a `: ping`) for this long means the connection is dead. */
  idleTimeoutMs?: number;
  /** Validate each summary with zod (on by default; the bench measures both). */
  validate?: boolean;
  /** Injected so tests can make jitter predictable. */
  random?: () => number;
  fetch?: typeof fetch;
}

export function streamUrl(options: Pick<EventStreamOptions, 'server' | 'agentName' | 'decision' | 'sessionId'>): string {
  const url = new URL('/api/v1/observability/events/stream', options.server);
  if (options.agentName) url.searchParams.set('agent_name', options.agentName);
  if (options.decision) url.searchParams.set('decision', options.decision);
  if (options.sessionId) url.searchParams.set('session_id', options.sessionId);
  return url.toString();
}

/**
 * Exponential backoff with jitter: the n-th retry waits between half and all of
 * `base * 2^n`, capped, so many dashboards that lost the same server do not return
 * in one burst.
 */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random: () => number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 20));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Routes parsed messages to the handlers; exported so the bench can time the same path. */
export function dispatchMessage(message: SseMessage, handlers: EventStreamHandlers, validate = true): void {
  let body: unknown;
  try {
    body = JSON.parse(message.data);
  } catch {
    handlers.onInvalid?.(message, 'data is not JSON');
    return;
  }
  switch (message.event) {
    case 'evaluation': {
      if (!validate) {
        handlers.onEvaluation(body as EvaluationSummary);
        return;
      }
      const parsed = EvaluationSummarySchema.safeParse(body);
      if (parsed.success) handlers.onEvaluation(parsed.data);
      else handlers.onInvalid?.(message, parsed.error.issues[0]?.message ?? 'invalid summary');
      return;
    }
    case 'reload': {
      const parsed = ReloadNoticeSchema.safeParse(body);
      if (parsed.success) handlers.onReload?.(parsed.data);
      else handlers.onInvalid?.(message, 'invalid reload notice');
      return;
    }
    case 'approval': {
      const parsed = ApprovalNoticeSchema.safeParse(body);
      if (parsed.success) handlers.onApproval?.(parsed.data);
      else handlers.onInvalid?.(message, 'invalid approval notice');
      return;
    }
    case 'lagged': {
      const skipped = (body as { skipped?: unknown } | null)?.skipped;
      if (typeof skipped === 'number') handlers.onLagged?.(skipped);
      return;
    }
    default:
      return;
  }
}

class StopError extends Error {
  constructor(readonly state: StreamState) {
    super('stream stopped');
  }
}

/**
 * Follows the stream until `signal` aborts or the server refuses for good (401/403,
 * another 4xx, or not an event stream). Resolves with the final state.
 */
export async function followEventStream(
  options: EventStreamOptions,
  handlers: EventStreamHandlers,
): Promise<StreamState> {
  const baseDelay = options.baseDelayMs ?? 500;
  const maxDelay = options.maxDelayMs ?? 15_000;
  const idleTimeout = options.idleTimeoutMs ?? 60_000;
  const random = options.random ?? Math.random;
  const doFetch = options.fetch ?? fetch;
  const url = streamUrl(options);
  const parser = new SseParser();
  const setState = (state: StreamState): StreamState => {
    handlers.onState?.(state);
    return state;
  };
  let attempt = 0;

  while (!options.signal?.aborted) {
    setState({ kind: 'connecting', attempt });
    let reason: string;
    try {
      await readOnce(url, options, parser, handlers, doFetch, idleTimeout, () => {
        attempt = 0;
        setState({ kind: 'live', since: Date.now() });
      });
      reason = 'the server closed the stream';
    } catch (error) {
      if (error instanceof StopError) return setState(error.state);
      if (options.signal?.aborted) break;
      reason = error instanceof Error ? describeError(error) : String(error);
    }
    if (options.signal?.aborted) break;
    parser.reset();
    const delay = Math.max(backoffDelay(attempt, baseDelay, maxDelay, random), parser.retryMs ?? 0);
    attempt++;
    setState({ kind: 'reconnecting', attempt, retryAt: Date.now() + delay, reason });
    await sleep(delay, options.signal);
  }
  return setState({ kind: 'closed' });
}

async function readOnce(
  url: string,
  options: EventStreamOptions,
  parser: SseParser,
  handlers: EventStreamHandlers,
  doFetch: typeof fetch,
  idleTimeout: number,
  onOpen: () => void,
): Promise<void> {
  // One controller per connection: the idle watchdog aborts it without touching the caller's signal.
  const connection = new AbortController();
  const abort = (): void => connection.abort();
  options.signal?.addEventListener('abort', abort, { once: true });
  let idle: NodeJS.Timeout | undefined;
  const armIdle = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => connection.abort(new Error(`no data for ${idleTimeout} ms`)), idleTimeout);
  };
  try {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (options.apiKey) headers['x-api-key'] = options.apiKey;
    if (parser.lastEventId !== null) headers['last-event-id'] = parser.lastEventId;
    armIdle();
    const response = await doFetch(url, { headers, signal: connection.signal });
    if (response.status === 401 || response.status === 403) {
      await response.body?.cancel();
      throw new StopError({
        kind: 'unauthorized',
        status: response.status,
        message:
          response.status === 401
            ? 'the server needs a valid API key (--api-key or GUARD_API_KEY)'
            : 'this API key may not read the live stream',
      });
    }
    if (response.status >= 400 && response.status < 500 && response.status !== 408 && response.status !== 429) {
      await response.body?.cancel();
      throw new StopError({ kind: 'error', message: `${url} answered HTTP ${response.status}` });
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      throw new Error(`HTTP ${response.status}`);
    }
    const type = response.headers.get('content-type') ?? '';
    if (!type.includes('text/event-stream')) {
      await response.body.cancel();
      throw new StopError({ kind: 'error', message: `${url} is not an event stream (content-type ${type || 'none'})` });
    }
    onOpen();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      armIdle();
      for (const message of parser.push(value)) dispatchMessage(message, handlers, options.validate ?? true);
    }
  } catch (error) {
    // Report why the watchdog fired rather than a bare AbortError.
    if (connection.signal.aborted && !options.signal?.aborted && connection.signal.reason instanceof Error) {
      throw connection.signal.reason;
    }
    throw error;
  } finally {
    clearTimeout(idle);
    options.signal?.removeEventListener('abort', abort);
  }
}

function describeError(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error && 'code' in cause) return `${String((cause as { code: unknown }).code)}: ${cause.message}`;
  return error.message;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
