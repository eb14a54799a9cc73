import { describe, expect, it } from 'vitest';
import type { ObservabilityEvent } from '../../src/model/index.js';
import { EventBatcher, type EventSink } from '../../src/sdk/events.js';

function event(n: number): ObservabilityEvent {
  return {
    control_execution_id: `e${n}`, trace_id: 't', span_id: 's', agent_name: 'a', control_id: n, control_name: `c${n}`,
    check_stage: 'pre', applies_to: 'tool', action: 'deny', matched: false, confidence: 1,
    timestamp: '2026-01-01T00:00:00Z', execution_duration_ms: 0, evaluator_name: null, selector_path: null,
    error_message: null, metadata: null,
  };
}

/** A sink that records batches and can be switched to fail, like a server going away. */
class Sink implements EventSink {
  batches: number[][] = [];
  failing = false;
  async ingestEventsJson(events: readonly string[]): Promise<unknown> {
    if (this.failing) throw new Error('down');
    this.batches.push(events.map((e) => (JSON.parse(e) as ObservabilityEvent).control_id));
    return {};
  }
}

const options = { batchSize: 3, intervalMs: 0, maxBuffered: 5, onError: () => undefined };

describe('EventBatcher', () => {
  it('sends when a batch is full and on close', async () => {
    const sink = new Sink();
    const batcher = new EventBatcher(sink, options);
    batcher.push([event(1), event(2)]);
    expect(sink.batches).toEqual([]);
    batcher.push([event(3)]);
    await batcher.flush();
    expect(sink.batches).toEqual([[1, 2, 3]]);
    batcher.push([event(4)]);
    await batcher.close();
    expect(sink.batches).toEqual([[1, 2, 3], [4]]);
    expect(batcher.sent).toBe(4);
  });

  it('sends a full batch once the check that filled it has returned, not inside it', async () => {
    const sink = new Sink();
    const batcher = new EventBatcher(sink, options);
    batcher.push([event(1), event(2), event(3), event(4)]);
    // The caller's step goes on before anything is serialised or posted.
    expect(sink.batches).toEqual([]);
    expect(batcher.pending).toBe(4);
    await new Promise((resolve) => setImmediate(resolve));
    await batcher.flush();
    expect(sink.batches).toEqual([[1, 2, 3, 4]]);
    expect(batcher.pending).toBe(0);
  });

  it('sends each event as it was pushed, field for field', async () => {
    const sent: string[] = [];
    const batcher = new EventBatcher({ ingestEventsJson: (events) => Promise.resolve(void sent.push(...events)) }, options);
    const pushed = { ...event(7), control_name: 'quote " and \u2028 line', metadata: { source: 'sdk', step_name: 'run_sql' }, selector_missing: true };
    batcher.push([pushed]);
    await batcher.close();
    expect(sent.map((e) => JSON.parse(e) as unknown)).toEqual([pushed]);
  });

  it('keeps failed events in order for retry, bounded, dropping the oldest', async () => {
    const sink = new Sink();
    const errors: number[] = [];
    const batcher = new EventBatcher(sink, { ...options, batchSize: 100, onError: (_e, pending) => errors.push(pending) });
    sink.failing = true;
    batcher.push([event(1), event(2), event(3)]);
    await batcher.flush();
    expect(errors).toEqual([3]);
    batcher.push([event(4), event(5), event(6), event(7)]);
    expect(batcher.pending).toBe(5);
    expect(batcher.dropped).toBe(2);
    sink.failing = false;
    await batcher.flush();
    expect(sink.batches).toEqual([[3, 4, 5, 6, 7]]);
    expect(batcher.pending).toBe(0);
  });

  it('splits sends at the API limit of 1000 events', async () => {
    const sink = new Sink();
    const batcher = new EventBatcher(sink, { ...options, batchSize: 5000, maxBuffered: 5000 });
    batcher.push(Array.from({ length: 2500 }, (_, i) => event(i)));
    await batcher.close();
    expect(sink.batches.map((b) => b.length)).toEqual([1000, 1000, 500]);
  });
});
