/**
 * Server-sent events (the HTML standard's event stream) read incrementally from a byte
 * stream, for the gateway's HTTP upstream: `event`, `id`, `data` (several lines joined
 * with "\n") and `retry`, lines ended by LF, CRLF or a lone CR, comments skipped.
 *
 * An event larger than the limit is skipped to its end and reported; reading goes on
 * with the next event. A line is kept as its chunks and decoded once it is whole, so a
 * large event costs time linear in its size.
 */

export interface SseEvent {
  /** The event type; "message" when the event names none. */
  event: string;
  /** The data lines joined with "\n"; "" for an event without data (a priming event that only sets an id). */
  data: string;
  /** The event's id, when it has one. */
  id: string | undefined;
}

export interface SseHandlers {
  onEvent(event: SseEvent): void;
  /** The server's reconnection delay, in milliseconds. */
  onRetry(ms: number): void;
  /** An event over the limit was skipped (its content is never read). */
  onOversize(): void;
}

const LF = 10;
const CR = 13;

export class SseReader {
  #line: Buffer[] = [];
  /** Bytes of the current event so far, its current line included. */
  #eventBytes = 0;
  /** Bytes of the current line, kept or not (a line of 0 bytes ends the event). */
  #lineBytes = 0;
  #skipping = false;
  /** The last chunk ended with CR: an LF that starts the next one ends no line. */
  #afterCr = false;
  #atStart = true;
  #type = '';
  #data: string[] = [];
  #id: string | undefined;

  constructor(
    private readonly max: number,
    private readonly handlers: SseHandlers,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    if (this.#afterCr && chunk.length > 0) {
      this.#afterCr = false;
      if (chunk[0] === LF) start = 1;
    }
    let lf = chunk.indexOf(LF, start);
    let cr = chunk.indexOf(CR, start);
    while (lf !== -1 || cr !== -1) {
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      this.#keep(chunk, start, end);
      start = end + 1;
      if (end === cr) {
        if (start === chunk.length) this.#afterCr = true;
        else if (chunk[start] === LF) start++;
      }
      this.#endLine();
      if (lf !== -1 && lf < start) lf = chunk.indexOf(LF, start);
      if (cr !== -1 && cr < start) cr = chunk.indexOf(CR, start);
    }
    this.#keep(chunk, start, chunk.length);
  }

  #keep(chunk: Buffer, start: number, end: number): void {
    const length = end - start;
    if (length === 0) return;
    this.#lineBytes += length;
    if (this.#skipping) return;
    this.#eventBytes += length;
    if (this.#eventBytes > this.max) {
      this.#skipEvent();
      return;
    }
    this.#line.push(chunk.subarray(start, end));
  }

  #skipEvent(): void {
    this.#skipping = true;
    this.#line = [];
    this.#resetEvent();
    this.handlers.onOversize();
  }

  #endLine(): void {
    const empty = this.#lineBytes === 0;
    this.#lineBytes = 0;
    if (this.#skipping) {
      if (empty) this.#skipping = false;
      return;
    }
    if (empty) {
      this.#dispatch();
      return;
    }
    const parts = this.#line;
    this.#line = [];
    let line = (parts.length === 1 ? parts[0]! : Buffer.concat(parts)).toString('utf8');
    if (this.#atStart) {
      this.#atStart = false;
      if (line.charCodeAt(0) === 0xfeff) line = line.slice(1);
    }
    this.#field(line);
  }

  #field(line: string): void {
    const colon = line.indexOf(':');
    if (colon === 0) return; // a comment (a keep-alive)
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = '';
    if (colon !== -1) value = line.charCodeAt(colon + 1) === 32 ? line.slice(colon + 2) : line.slice(colon + 1);
    if (name === 'data') this.#data.push(value);
    else if (name === 'event') this.#type = value;
    else if (name === 'id') {
      if (!value.includes('\0')) this.#id = value;
    } else if (name === 'retry' && /^\d+$/.test(value)) this.handlers.onRetry(Number(value));
  }

  #dispatch(): void {
    const event: SseEvent = { event: this.#type === '' ? 'message' : this.#type, data: this.#data.join('\n'), id: this.#id };
    const any = this.#data.length > 0 || this.#id !== undefined;
    this.#resetEvent();
    if (any) this.handlers.onEvent(event);
  }

  #resetEvent(): void {
    this.#eventBytes = 0;
    this.#type = '';
    this.#data = [];
    this.#id = undefined;
  }
}
