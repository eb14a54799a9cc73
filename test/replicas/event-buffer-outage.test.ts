/** Events buffered while the database is unreachable are written when it returns. */
import { describe, expect, it } from 'vitest';
import type { ObservabilityEvent } from '../../src/model/index.js';
import { EventBuffer } from '../../src/observability/event-buffer.js';
import { StoreError } from '../../src/store/types.js';

function events(n: number, from = 0): ObservabilityEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    control_execution_id: `ce-${from + i}`,
    trace_id: 't',
    span_id: 's',
    agent_name: 'bot',
    control_id: 1,
    control_name: 'c',
    check_stage: 'pre',
    applies_to: 'tool',
    action: 'deny',
    matched: true,
    confidence: 1,
    timestamp: new Date(0).toISOString(),
    execution_duration_ms: 0,
    evaluator_name: null,
    selector_path: null,
    error_message: null,
    metadata: null,
  }));
}

describe('EventBuffer through an outage', () => {
  it('keeps unwritten events, bounded by the capacity, and writes them in order afterwards', async () => {
    let down = true;
    const written: string[] = [];
    const dropped: Record<string, number> = {};
    let deferred = 0;
    const buffer = new EventBuffer({
      capacity: 10,
      flushThreshold: 100,
      write: async (batch) => {
        if (down) throw new StoreError('unavailable', 'database unavailable');
        written.push(...batch.map((e) => e.control_execution_id));
      },
      retryable: (error) => error instanceof StoreError && error.kind === 'unavailable',
      onWriteDeferred: (_error, n) => (deferred = n),
      onDropped: (n, reason) => (dropped[reason] = (dropped[reason] ?? 0) + n),
    });

    expect(buffer.push(events(6))).toEqual({ enqueued: 6, dropped: 0 });
    await buffer.flush();
    expect(buffer.size).toBe(6);
    expect(deferred).toBe(6);
    // Room for four more; the rest is refused (and the caller is told so).
    expect(buffer.push(events(6, 6))).toEqual({ enqueued: 4, dropped: 2 });
    await buffer.flush();
    expect(buffer.size).toBe(10);
    expect(dropped).toEqual({ buffer_full: 2 });

    down = false;
    await buffer.flush();
    expect(buffer.size).toBe(0);
    expect(written).toEqual(events(10).map((e) => e.control_execution_id));
    expect(dropped).toEqual({ buffer_full: 2 });
  });

  it('without retryable, a failed write still drops its batch', async () => {
    const dropped: string[] = [];
    const buffer = new EventBuffer({
      capacity: 10,
      write: async () => {
        throw new StoreError('unavailable', 'down');
      },
      onDropped: (n, reason) => dropped.push(`${reason}:${n}`),
    });
    buffer.push(events(3));
    await buffer.flush();
    expect(buffer.size).toBe(0);
    expect(dropped).toEqual(['write_failed:3']);
  });
});
