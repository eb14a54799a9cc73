/**
 * The events a session of the HTTP face holds for resumes (mcp-http-events.ts): bounded by
 * count and bytes over all its streams, oldest first; an event dropped before any
 * connection carried it is told; a finished stream is forgotten once nothing of it is held;
 * over all sessions sharing a HeldBudget, at most its bytes, the oldest of any session first.
 */
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { HeldBudget, SessionEvents, type EventStream } from '../../src/adapters/mcp-http-events.js';

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

  it('holds at most the budget over all sessions: 1,000 sessions at their own bound hold no more than it, the oldest go first', () => {
    const budget = new HeldBudget(1024 * 1024);
    const dropped = new Set<number>();
    const sessions = Array.from({ length: 1000 }, (_, i) => new SessionEvents({ maxBytes: 64 * 1024 }, () => dropped.add(i), budget));
    const lastIds: string[] = [];
    for (const events of sessions) {
      let last = '';
      // 64 events of about 1 kB: each session at its own 64 KiB bound, 64 MiB in all without the budget.
      for (let n = 0; n < 64; n++) last = idOf(events.event(events.standalone, JSON.stringify({ pad: 'x'.repeat(950) })));
      lastIds.push(last);
    }
    const held = sessions.flatMap((e) => e.standalone.held);
    expect(held.reduce((n, h) => n + h.bytes, 0)).toBeLessThanOrEqual(1024 * 1024);
    expect(budget.bytes).toBe(held.reduce((n, h) => n + h.bytes, 0));
    // The newest sessions' events are held; the oldest sessions' were dropped, and told.
    expect(sessions.at(-1)!.standalone.held.length).toBeGreaterThan(0);
    expect(sessions[0]!.standalone.held).toEqual([]);
    expect(dropped.has(0)).toBe(true);
    expect(dropped.has(999)).toBe(false);
    // A session that ends gives its bytes back.
    sessions.at(-1)!.clear();
    expect(budget.bytes).toBe(sessions.flatMap((e) => e.standalone.held).reduce((n, h) => n + h.bytes, 0));
    expect(sessions.at(-2)!.resume(lastIds.at(-2)!)).toMatchObject({ ok: true, frames: [] });
  });
});
