import { describe, expect, it } from 'vitest';
import type { ControlExecution } from '../../src/engine/api.js';
import { ObservabilityEventSchema, type ObservabilityEvent } from '../../src/model/index.js';
import { EventBatcher, eventJsonOf, type EventSink } from '../../src/sdk/events.js';

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

  it('a send goes on only with full batches: what comes in during it waits for a batch, the interval or close', async () => {
    const { sink, batches, release } = heldSink();
    const batcher = new EventBatcher(sink, options);
    batcher.push([event(1), event(2), event(3)]);
    await expect.poll(() => batches.length).toBe(1);
    // Two events while the first batch is in flight: not a batch, so not sent after it.
    batcher.push([event(4), event(5)]);
    release();
    // The send's end and whatever it would do next run on microtasks, before the next turn.
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([[1, 2, 3]]);
    expect(batcher.pending).toBe(2);
    // The third makes a batch: sent on its own turn, in order.
    batcher.push([event(6)]);
    await expect.poll(() => batches.length).toBe(2);
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches[1]).toEqual([4, 5, 6]);
    // The interval's flush sends what waits when it is asked, however few, and not what comes in during its send.
    batcher.push([event(7)]);
    const flushing = batcher.flush();
    await expect.poll(() => batches.length).toBe(3);
    batcher.push([event(8)]);
    release();
    await flushing;
    expect(batches[2]).toEqual([7]);
    expect(batcher.pending).toBe(1);
    const closing = batcher.close();
    await expect.poll(() => batches.length).toBe(4);
    release();
    await closing;
    expect(batches[3]).toEqual([8]);
    expect(batcher.sent).toBe(8);
  });

  it('a flush asked while a full batch is in flight also sends what was queued when it was asked', async () => {
    const { sink, batches, release } = heldSink();
    const batcher = new EventBatcher(sink, options);
    batcher.push([event(1), event(2), event(3)]);
    await expect.poll(() => batches.length).toBe(1);
    batcher.push([event(4), event(5)]);
    let flushed = false;
    const flushing = batcher.flush().then(() => (flushed = true));
    release();
    await expect.poll(() => batches.length).toBe(2);
    expect(flushed).toBe(false);
    release();
    await flushing;
    expect(batches).toEqual([[1, 2, 3], [4, 5]]);
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

  it('through a long outage keeps exactly the newest events, in order, while sends fail and are retried', async () => {
    const sink = new Sink();
    const batcher = new EventBatcher(sink, { ...options, batchSize: 1000, maxBuffered: 50 });
    sink.failing = true;
    let n = 0;
    for (let check = 0; check < 150; check++) {
      batcher.push(Array.from({ length: 7 }, () => event(n++)));
      if (check % 10 === 0) await batcher.flush();
      expect(batcher.pending).toBe(Math.min(50, n));
    }
    expect(batcher.dropped).toBe(n - 50);
    sink.failing = false;
    await batcher.flush();
    expect(sink.batches).toEqual([Array.from({ length: 50 }, (_, i) => n - 50 + i)]);
    expect(batcher.pending).toBe(0);
  });

  it('a send that fails while newer events filled the buffer puts its events back in front, then drops the oldest', async () => {
    let fail: (error: Error) => void = () => undefined;
    const sent: number[][] = [];
    let calls = 0;
    const sink: EventSink = {
      ingestEventsJson: (events) => {
        if (calls++ === 0) return new Promise((_resolve, reject) => (fail = reject));
        sent.push(events.map((e) => (JSON.parse(e) as ObservabilityEvent).control_id));
        return Promise.resolve({});
      },
    };
    const batcher = new EventBatcher(sink, { ...options, batchSize: 100, maxBuffered: 5 });
    batcher.push([event(1), event(2), event(3)]);
    const first = batcher.flush();
    // In flight: 1-3. Queued meanwhile past the bound: 4-10, of which 6-10 stay.
    batcher.push([4, 5, 6, 7, 8, 9, 10].map(event));
    expect(batcher.pending).toBe(5);
    fail(new Error('down'));
    await first;
    expect(batcher.pending).toBe(5);
    await batcher.flush();
    expect(sent).toEqual([[6, 7, 8, 9, 10]]);
    expect(batcher.dropped).toBe(5);
  });

  it('splits sends at the API limit of 1000 events', async () => {
    const sink = new Sink();
    const batcher = new EventBatcher(sink, { ...options, batchSize: 5000, maxBuffered: 5000 });
    batcher.push(Array.from({ length: 2500 }, (_, i) => event(i)));
    await batcher.close();
    expect(sink.batches.map((b) => b.length)).toEqual([1000, 1000, 500]);
  });
});

describe('eventJsonOf', () => {
  const execution = (over: Partial<ControlExecution>): ControlExecution => ({
    control_id: 4, control_name: 'no-drop', action: 'deny', matched: true, confidence: 0.5, error_message: null,
    evaluator_name: 'regex', selector_path: 'input.query', duration_ms: 0.0123, mode: 'enforce', ...over,
  });
  const ctx = {
    agentName: 'bench-mcp', step: { type: 'tool' as const, name: 'run_sql', input: { query: 'x' } }, stage: 'pre' as const,
    traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), timestamp: '2026-01-01T00:00:00.000Z', setRevision: 3, sessionId: 'run-1',
  };

  it('writes each execution as the ObservabilityEvent the server takes, field for field', () => {
    const texts = eventJsonOf([
      execution({}),
      // What a control's author or an evaluator's error can put in a string: quotes, backslashes, line separators, control characters.
      execution({ control_id: 5, control_name: 'q"uote\\ \u2028\u0000 名前', matched: false, confidence: 7, duration_ms: -1, error_message: 'boom "\n"', evaluator_name: '', selector_path: '', mode: 'shadow', selector_missing: true }),
    ], ctx);
    const events = texts.map((t) => ObservabilityEventSchema.parse(JSON.parse(t)));
    const shared = {
      trace_id: ctx.traceId, span_id: ctx.spanId, agent_name: 'bench-mcp', check_stage: 'pre', applies_to: 'tool', timestamp: ctx.timestamp,
      metadata: { source: 'sdk', step_name: 'run_sql' }, set_revision: 3, session_id: 'run-1',
    };
    expect(events[0]).toEqual({
      ...shared, control_execution_id: events[0]!.control_execution_id, control_id: 4, control_name: 'no-drop', action: 'deny', matched: true,
      confidence: 0.5, execution_duration_ms: 0.0123, evaluator_name: 'regex', selector_path: 'input.query', error_message: null, mode: 'enforce',
    });
    expect(events[1]).toEqual({
      ...shared, control_execution_id: events[1]!.control_execution_id, control_id: 5, control_name: 'q"uote\\ \u2028\u0000 名前', action: 'deny',
      matched: false, confidence: 1, execution_duration_ms: 0, evaluator_name: null, selector_path: null, error_message: 'boom "\n"', mode: 'shadow',
      selector_missing: true,
    });
    expect(events[0]!.control_execution_id).not.toBe(events[1]!.control_execution_id);
  });

  it('gives every event of a check, and of every other check, its own version 4 UUID', () => {
    const idsOf = (count: number) => eventJsonOf(Array.from({ length: count }, () => execution({})), ctx).map((t) => (JSON.parse(t) as ObservabilityEvent).control_execution_id);
    // 5,000 executions in one check: past the 4,096 one UUID's last three hex digits can tell apart.
    const ids = [...idsOf(20), ...idsOf(20), ...idsOf(5000)];
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("writes a control's new name, action, evaluator, selector or mode as soon as they change under the same id", () => {
    const parsed = (over: Partial<ControlExecution>) => JSON.parse(eventJsonOf([execution(over)], ctx)[0]!) as ObservabilityEvent;
    expect(parsed({})).toMatchObject({ control_id: 4, control_name: 'no-drop', action: 'deny', evaluator_name: 'regex', selector_path: 'input.query', mode: 'enforce' });
    const changes: Array<Partial<ControlExecution>> = [
      { control_name: 'no-drop-v2' }, { action: 'steer' }, { evaluator_name: 'list' }, { selector_path: 'input.sql' }, { mode: 'shadow' }, {},
    ];
    for (const change of changes) expect(parsed(change)).toMatchObject({ control_id: 4, control_name: 'no-drop', action: 'deny', evaluator_name: 'regex', selector_path: 'input.query', mode: 'enforce', ...change });
  });

  it('writes a confidence or duration that is not a finite number as JSON.stringify does (null), never as NaN', () => {
    const [text] = eventJsonOf([execution({ confidence: Number.NaN, duration_ms: Number.POSITIVE_INFINITY, matched: false })], ctx);
    expect(JSON.parse(text!)).toMatchObject({ confidence: null, execution_duration_ms: null, matched: false });
  });

  it('writes null for a step without a session or a set without a revision', () => {
    const [text] = eventJsonOf([execution({})], { ...ctx, sessionId: null, setRevision: null });
    expect(JSON.parse(text!)).toMatchObject({ session_id: null, set_revision: null });
  });
});

/** A sink whose sends stay in flight until `release()`: the control ids of each batch, in order. */
function heldSink(): { sink: EventSink; batches: number[][]; release: () => void } {
  const batches: number[][] = [];
  let resolveSend = (): void => undefined;
  const sink: EventSink = {
    ingestEventsJson: (events) => {
      batches.push(events.map((e) => (JSON.parse(e) as ObservabilityEvent).control_id));
      return new Promise<void>((resolve) => (resolveSend = resolve));
    },
  };
  return { sink, batches, release: () => resolveSend() };
}
