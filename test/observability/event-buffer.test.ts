import { describe, expect, it } from 'vitest';
import type { ObservabilityEvent } from '../../src/model/index.js';
import { EventBuffer, MAX_REFUSALS_IN_A_ROW, WRITE_BATCH_SIZE } from '../../src/observability/event-buffer.js';
import { makeEvent } from './fixtures.js';

function collector() {
  const batches: ObservabilityEvent[][] = [];
  return { batches, write: async (batch: ObservabilityEvent[]) => void batches.push(batch) };
}

describe('EventBuffer', () => {
  it('keeps events until flushed, then writes them in batches of at most 1000', async () => {
    const sink = collector();
    const buffer = new EventBuffer({ capacity: 5000, flushThreshold: 5000, write: sink.write });
    buffer.push(Array.from({ length: 2500 }, (_, i) => makeEvent(i)));
    expect(buffer.size).toBe(2500);
    expect(sink.batches).toHaveLength(0);
    await buffer.flush();
    expect(sink.batches.map((b) => b.length)).toEqual([WRITE_BATCH_SIZE, WRITE_BATCH_SIZE, 500]);
    expect(sink.batches.flat().map((e) => e.control_execution_id)).toEqual(
      Array.from({ length: 2500 }, (_, i) => `exec-${i}`),
    );
    expect(buffer.size).toBe(0);
  });

  it('drops and counts what does not fit; never holds more than its capacity', async () => {
    const sink = collector();
    const dropped: number[] = [];
    const buffer = new EventBuffer({
      capacity: 10,
      flushThreshold: 10,
      // A write that never finishes: the in-flight batch still counts against capacity.
      write: (batch) => {
        sink.batches.push(batch);
        return new Promise<void>(() => undefined);
      },
      onDropped: (n) => dropped.push(n),
    });
    expect(buffer.push(Array.from({ length: 7 }, (_, i) => makeEvent(i)))).toEqual({ enqueued: 7, dropped: 0 });
    expect(buffer.push(Array.from({ length: 7 }, (_, i) => makeEvent(i)))).toEqual({ enqueued: 3, dropped: 4 });
    // Reaching the threshold started a flush whose write hangs.
    expect(sink.batches).toHaveLength(1);
    expect(buffer.size).toBe(10);
    expect(buffer.push([makeEvent(99)])).toEqual({ enqueued: 0, dropped: 1 });
    expect(buffer.size).toBe(10);
    expect(dropped).toEqual([4, 1]);
  });

  it('flushes by itself when the threshold is reached', async () => {
    const sink = collector();
    const buffer = new EventBuffer({ capacity: 100, write: sink.write });
    buffer.push(Array.from({ length: 49 }, (_, i) => makeEvent(i)));
    expect(sink.batches).toHaveLength(0);
    buffer.push([makeEvent(49)]);
    await buffer.flush();
    expect(sink.batches.flat()).toHaveLength(50);
  });

  it('runs one flush at a time and writes events pushed during a flush in a later round', async () => {
    let active = 0;
    let maxActive = 0;
    const written: string[] = [];
    let release: () => void = () => undefined;
    const buffer = new EventBuffer({
      capacity: 100,
      flushThreshold: 100,
      write: async (batch) => {
        active++;
        maxActive = Math.max(maxActive, active);
        await new Promise<void>((resolve) => (release = resolve));
        written.push(...batch.map((e) => e.control_execution_id));
        active--;
      },
    });
    buffer.push([makeEvent(1)]);
    const first = buffer.flush();
    buffer.push([makeEvent(2)]);
    const second = buffer.flush();
    release();
    await new Promise((r) => setImmediate(r));
    release();
    await Promise.all([first, second]);
    expect(maxActive).toBe(1);
    expect(written).toEqual(['exec-1', 'exec-2']);
  });

  it('drops a batch whose write fails, counts it, and keeps working', async () => {
    const errors: number[] = [];
    const drops: Array<[number, string]> = [];
    const written: number[] = [];
    let fail = true;
    const buffer = new EventBuffer({
      capacity: 100,
      flushThreshold: 100,
      write: async (batch) => {
        if (fail) throw new Error('disk full');
        written.push(batch.length);
      },
      onWriteError: (_e, n) => errors.push(n),
      onDropped: (n, reason) => drops.push([n, reason]),
      onWritten: (n) => written.push(-n),
    });
    buffer.push([makeEvent(1), makeEvent(2)]);
    await buffer.flush();
    expect(errors).toEqual([2]);
    expect(drops).toEqual([[2, 'write_failed']]);
    expect(buffer.size).toBe(0);
    fail = false;
    buffer.push([makeEvent(3)]);
    await buffer.flush();
    expect(written).toEqual([1, -1]);
  });
});

describe('EventBuffer: a batch the store refuses', () => {
  function refusing(bad: (id: string) => boolean) {
    const written: string[] = [];
    const drops: Array<[number, string]> = [];
    const rejections: Array<[number, number]> = [];
    let writes = 0;
    const buffer = new EventBuffer({
      capacity: 5000,
      flushThreshold: 5000,
      write: async (batch) => {
        writes++;
        if (batch.some((e) => bad(e.control_execution_id))) throw new Error('refused');
        written.push(...batch.map((e) => e.control_execution_id));
      },
      onDropped: (n, reason) => drops.push([n, reason]),
      onRowsRejected: (_e, rejected, n) => rejections.push([rejected, n]),
    });
    return { buffer, written, drops, rejections, writes: () => writes };
  }

  it('writes it again one event at a time and drops only the events refused alone', async () => {
    const t = refusing((id) => id === 'exec-50' || id === 'exec-70');
    t.buffer.push(Array.from({ length: 101 }, (_, i) => makeEvent(i)));
    await t.buffer.flush();
    expect(t.written).toHaveLength(99);
    expect(t.written).not.toContain('exec-50');
    expect(t.drops).toEqual([[2, 'rejected']]);
    expect(t.rejections).toEqual([[2, 101]]);
    expect(t.buffer.size).toBe(0);
  });

  it('drops the batch as write_failed when the store refuses its first events one by one too', async () => {
    const t = refusing(() => true);
    t.buffer.push(Array.from({ length: 500 }, (_, i) => makeEvent(i)));
    await t.buffer.flush();
    expect(t.drops).toEqual([[500, 'write_failed']]);
    // The batch, then MAX_REFUSALS_IN_A_ROW single events: not 500 futile writes.
    expect(t.writes()).toBe(1 + MAX_REFUSALS_IN_A_ROW);
  });
});
