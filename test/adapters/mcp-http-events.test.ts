/**
 * The events a session of the HTTP face holds for resumes (mcp-http-events.ts): bounded by
 * count and bytes over all its streams, oldest first; an event dropped before any
 * connection carried it is told; a finished stream is forgotten once nothing of it is held.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { SessionEvents, type EventStream } from '../../src/adapters/mcp-http-events.js';

const idOf = (frame: string) => /^id: (.*)$/m.exec(frame)![1]!;
const connected = {} as ServerResponse;

describe('the events a session holds', () => {
  it('keeps at most maxEvents and maxBytes over all its streams, and tells of events dropped undelivered', () => {
    const dropped: number[] = [];
    const events = new SessionEvents({ maxEvents: 50, maxBytes: 4096 }, (stream) => dropped.push(stream.number));
    const streams: EventStream[] = [events.standalone, events.open(), events.open()];
    streams[1]!.res = connected;
    const ids: string[][] = [[], [], []];
    for (let i = 0; i < 300; i++) ids[i % 3]!.push(idOf(events.event(streams[i % 3]!, JSON.stringify({ i, pad: 'x'.repeat(i % 7 === 0 ? 500 : 10) }))));
    const held = streams.flatMap((s) => s.held);
    expect(held.length).toBeLessThanOrEqual(50);
    expect(held.reduce((n, h) => n + h.bytes, 0)).toBeLessThanOrEqual(4096);
    // Streams 0 and 2 had no connection: their drops are told; stream 1's were delivered.
    expect(new Set(dropped)).toEqual(new Set([0, 2]));
    // The newest of each stream resumes; the oldest is gone (410).
    for (let s = 0; s < 3; s++) {
      expect(events.resume(ids[s]!.at(-2)!)).toMatchObject({ ok: true, frames: [expect.stringContaining(ids[s]!.at(-1)!)] });
      expect(events.resume(ids[s]![0]!)).toMatchObject({ ok: false, status: 410 });
    }
  });

  it('never holds an event over maxBytes, and forgets a finished stream once nothing of it is held', () => {
    const events = new SessionEvents({ maxEvents: 2, maxBytes: 200 }, () => undefined);
    const a = events.open();
    a.res = connected;
    const priming = idOf(events.priming(a));
    events.event(a, JSON.stringify({ big: 'x'.repeat(300) }));
    expect(a.held).toEqual([]);
    expect(events.resume(priming)).toMatchObject({ ok: false, status: 410 });
    const last = idOf(events.event(a, '{}'));
    a.res = null;
    events.finish(a);
    expect(events.resume(last)).toMatchObject({ ok: true, frames: [] });
    const b = events.open();
    events.event(b, '{}');
    events.event(b, '{}');
    // a's last event was evicted: a is forgotten, and its ids are refused as no longer held.
    expect(events.resume(last)).toMatchObject({ ok: false, status: 410 });
  });
});
