/**
 * The SSE streams of one session of the gateway's HTTP face, made resumable (MCP spec
 * revision 2025-11-25, streamable HTTP, "Resumability and Redelivery"): every event gets
 * an id, recent events are held, and a GET with `Last-Event-ID` replays the events after
 * it on the stream it belongs to, never those of another stream.
 *
 * - An id is `<tag>.<stream>.<seq>`: a random tag of the session, the stream's number
 *   (0: the session's GET stream; then one per POST answered as a stream) and the event's
 *   place in that stream (0: the priming event, before any message). It is unique within
 *   the session and a cursor within its stream. The tag makes an id of another session (or
 *   of an earlier run) one this session refuses rather than reads as its own; an id is only
 *   ever looked up in the session of the Mcp-Session-Id the request carries.
 * - Held: the session's newest events, at most `maxEvents` and `maxBytes` over all its
 *   streams; past either the oldest go first. An event larger than `maxBytes` is written
 *   but never held. Over all sessions of the gateway at most `maxTotalBytes` are held
 *   (HeldBudget): past it the oldest event of any session goes first. A resume that would need an event no longer held is refused (410),
 *   not answered with a stream that silently skips it.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/** Events held per session, over all its streams (the bound the GET stream's queue had before). */
export const MAX_HELD_EVENTS = 1000;
/** Bytes of events held per session. */
export const MAX_HELD_BYTES = 1024 * 1024;
/** Bytes of events held over all sessions of a gateway: the per-session bound alone allows 1 GiB at the default 1,000 sessions. */
export const MAX_HELD_TOTAL_BYTES = 64 * 1024 * 1024;

export interface HeldBounds {
  maxEvents: number;
  maxBytes: number;
  /** Over all sessions of the gateway (one HeldBudget). */
  maxTotalBytes: number;
}

interface Held {
  stream: EventStream;
  seq: number;
  frame: string;
  bytes: number;
  owner: SessionEvents;
  /** Dropped by its session already (the budget's queue still lists it). */
  gone: boolean;
}

/** The events held over every session of one gateway, oldest first: past `maxBytes` the oldest of any session is dropped. */
export class HeldBudget {
  #order: Held[] = [];
  #head = 0;
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  get bytes(): number {
    return this.#bytes;
  }

  add(held: Held): void {
    this.#order.push(held);
    this.#bytes += held.bytes;
    while (this.#bytes > this.maxBytes) {
      const oldest = this.#order[this.#head++]!;
      // Sessions drop their events oldest first, so a live oldest here is its session's oldest.
      if (!oldest.gone) oldest.owner.dropOldest();
    }
    if (this.#head > 1024 && this.#head * 2 > this.#order.length) {
      this.#order = this.#order.filter((h, i) => i >= this.#head && !h.gone);
      this.#head = 0;
    }
  }

  /** An event its session dropped (evicted, or the session ended). */
  release(held: Held): void {
    held.gone = true;
    this.#bytes -= held.bytes;
  }
}

/** One SSE stream of a session: the connection it is written to now (if any) and its held events. */
export class EventStream {
  /** The response the stream is written to; null while its client is away. */
  res: ServerResponse | null = null;
  /** The seq of the next event (0 is the priming event's). */
  nextSeq = 1;
  /** Held events, oldest first. */
  readonly held: Held[] = [];
  /** The lowest seq a replay may still need: every event below it is held no more. */
  firstKept = 1;
  /** The highest seq written to a connection: a GET without Last-Event-ID gets only later ones. */
  deliveredThrough = 0;
  /** The stream's last event is written: a resume replays what is left, then ends. */
  finished = false;

  constructor(readonly number: number) {}
}

export type Resumed = { ok: true; stream: EventStream; frames: string[] } | { ok: false; status: number; message: string };

export class SessionEvents {
  readonly #tag = randomBytes(9).toString('base64url');
  readonly #streams = new Map<number, EventStream>();
  readonly #bounds: HeldBounds;
  readonly #budget: HeldBudget;
  #nextStream = 1;
  /** Every held event of the session, oldest first, from #head on. */
  #order: Held[] = [];
  #head = 0;
  #bytes = 0;

  /** `ondrop`: an event evicted before any connection carried it (told, never silent). `budget`: shared by the gateway's sessions. */
  constructor(
    bounds: Partial<HeldBounds>,
    private readonly ondrop: (stream: EventStream) => void,
    budget?: HeldBudget,
  ) {
    this.#bounds = { maxEvents: bounds.maxEvents ?? MAX_HELD_EVENTS, maxBytes: bounds.maxBytes ?? MAX_HELD_BYTES, maxTotalBytes: bounds.maxTotalBytes ?? MAX_HELD_TOTAL_BYTES };
    this.#budget = budget ?? new HeldBudget(this.#bounds.maxTotalBytes);
    this.#streams.set(0, new EventStream(0));
  }

  /** The session's GET stream. */
  get standalone(): EventStream {
    return this.#streams.get(0)!;
  }

  /** A new stream (a POST answered as SSE). */
  open(): EventStream {
    const stream = new EventStream(this.#nextStream++);
    this.#streams.set(stream.number, stream);
    return stream;
  }

  /** The priming event (an id and empty data, as the spec suggests): a resume point before any message of the stream. */
  priming(stream: EventStream): string {
    return `id: ${this.#id(stream, stream.nextSeq - 1)}\ndata: \n\n`;
  }

  /** The SSE event carrying `json` on `stream`, held for a resume; written by the caller. */
  event(stream: EventStream, json: string): string {
    const seq = stream.nextSeq++;
    const frame = `id: ${this.#id(stream, seq)}\nevent: message\ndata: ${json}\n\n`;
    const bytes = Buffer.byteLength(frame);
    if (bytes > this.#bounds.maxBytes) {
      // Too large to hold: nothing up to it can be replayed whole.
      this.#release(stream, seq + 1);
    } else {
      const held: Held = { stream, seq, frame, bytes, owner: this, gone: false };
      stream.held.push(held);
      this.#order.push(held);
      this.#bytes += bytes;
      this.#budget.add(held);
      this.#evict();
    }
    if (stream.res) stream.deliveredThrough = seq;
    return frame;
  }

  /** The stream's last event is written; it is forgotten once nothing of it is held. */
  finish(stream: EventStream): void {
    stream.finished = true;
    this.#forgetIfDone(stream);
  }

  /** The held events of `stream` no connection has carried yet, marked carried. */
  undelivered(stream: EventStream): string[] {
    const frames = stream.held.filter((h) => h.seq > stream.deliveredThrough).map((h) => h.frame);
    stream.deliveredThrough = stream.nextSeq - 1;
    return frames;
  }

  /** The stream `lastEventId` belongs to and its events after it, or why it cannot be resumed. */
  resume(lastEventId: string): Resumed {
    const forged = { ok: false as const, status: 400, message: 'Last-Event-ID is not the id of an event of this session: resume with an id this session sent' };
    const match = /^([\w-]+)\.(\d{1,15})\.(\d{1,15})$/.exec(lastEventId);
    if (!match || match[1] !== this.#tag) return forged;
    const number = Number(match[2]);
    const seq = Number(match[3]);
    const stream = this.#streams.get(number);
    if (number >= this.#nextStream || (stream && seq >= stream.nextSeq)) return forged;
    if (!stream || seq + 1 < stream.firstKept) {
      return {
        ok: false,
        status: 410,
        message: `the events after Last-Event-ID are no longer held (a session keeps its newest ${this.#bounds.maxEvents} events, ${this.#bounds.maxBytes} bytes; the gateway ${this.#budget.maxBytes} bytes over all sessions): that stream cannot be resumed without a gap`,
      };
    }
    const frames = stream.held.filter((h) => h.seq > seq).map((h) => h.frame);
    stream.deliveredThrough = stream.nextSeq - 1;
    return { ok: true, stream, frames };
  }

  /** Drops every held event (the session ended). */
  clear(): void {
    for (let i = this.#head; i < this.#order.length; i++) this.#budget.release(this.#order[i]!);
    this.#order = [];
    this.#head = 0;
    this.#bytes = 0;
    for (const stream of this.#streams.values()) stream.held.length = 0;
  }

  #id(stream: EventStream, seq: number): string {
    return `${this.#tag}.${stream.number}.${seq}`;
  }

  /** Drops the session's oldest held event (its own bounds, or the gateway's over all sessions). */
  dropOldest(): void {
    const oldest = this.#order[this.#head++]!;
    this.#bytes -= oldest.bytes;
    this.#budget.release(oldest);
    // Events leave in the order they came, so the session's oldest is its stream's oldest.
    oldest.stream.held.shift();
    this.#release(oldest.stream, oldest.seq + 1);
  }

  #evict(): void {
    while (this.#order.length - this.#head > this.#bounds.maxEvents || this.#bytes > this.#bounds.maxBytes) this.dropOldest();
    if (this.#head > 1024 && this.#head * 2 > this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Events of `stream` below `firstKept` are held no more; one no connection carried is told. */
  #release(stream: EventStream, firstKept: number): void {
    if (firstKept - 1 > stream.deliveredThrough && !stream.res) {
      stream.deliveredThrough = firstKept - 1;
      this.ondrop(stream);
    }
    stream.firstKept = firstKept;
    this.#forgetIfDone(stream);
  }

  #forgetIfDone(stream: EventStream): void {
    if (stream.finished && stream.held.length === 0 && !stream.res && stream.number !== 0) this.#streams.delete(stream.number);
  }
}
