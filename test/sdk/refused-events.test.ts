/**
 * Events the server refuses as invalid (422 naming `events[i]`) are let go, said and
 * counted, and the rest of their batch is delivered: kept in front for a retry no server
 * would take, they held back every later event of the agent. Against a real server, with
 * the in-thread client and with the event thread (the MCP gateway's way).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiError } from '../../src/errors.js';
import type { ObservabilityEvent } from '../../src/model/index.js';
import { EventThreadSink } from '../../src/sdk/event-thread.js';
import { EventBatcher, type EventSink } from '../../src/sdk/events.js';
import { startRealServer, type RunningServer } from './real-server.js';

let server: RunningServer | undefined;
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await server?.close();
  server = undefined;
});

function match(id: string, overrides: Partial<ObservabilityEvent> = {}): ObservabilityEvent {
  return {
    control_execution_id: id, trace_id: '0af7651916cd43dd8448eb211c80319c', span_id: 'b7ad6b7169203331', agent_name: 'refused-bot',
    control_id: 1, control_name: 'no-drop', check_stage: 'pre', applies_to: 'tool', action: 'deny', matched: true, confidence: 1,
    timestamp: new Date().toISOString(), execution_duration_ms: 1, evaluator_name: 'regex', selector_path: 'input.query',
    error_message: null, metadata: null, ...overrides,
  };
}

const sinks: Array<[string, (s: RunningServer) => EventSink]> = [
  ['the in-thread client', (s) => s.client],
  [
    'the event thread',
    (s) => {
      const sink = new EventThreadSink({ url: `${s.url}/api/v1/observability/events`, timeoutMs: 10_000 });
      closers.push(() => sink.close());
      return sink;
    },
  ],
];

describe.each(sinks)('events the server refuses, sent through %s', (_, sinkOf) => {
  it('are let go, said and counted; the rest of their batch and every later event are delivered', async () => {
    server = await startRealServer();
    const said: Array<{ refused: number; status: number; detail: string }> = [];
    const failures: unknown[] = [];
    const batcher = new EventBatcher(sinkOf(server), {
      batchSize: 100, intervalMs: 0, maxBuffered: 1000,
      onError: (error) => failures.push(error),
      onRefused: (error: ApiError, refused) => said.push({ refused, status: error.status, detail: error.message }),
    });
    // A duration past what the server takes (10^15 ms), and a count on a match: both named by index.
    batcher.push([match('e1'), match('e2', { execution_duration_ms: 1e16 }), match('e3'), { ...match('e4'), count: 5 }, match('e5')]);
    await batcher.flush();
    // The server names what its schema refuses first, then the rule on count: two answers, each naming one.
    expect(said).toEqual([
      { refused: 1, status: 422, detail: expect.stringMatching(/events\[1\]\.execution_duration_ms/) },
      { refused: 1, status: 422, detail: expect.stringMatching(/events\[2\]\.count/) },
    ]);
    expect(failures).toEqual([]);
    expect(batcher.pending).toBe(0);
    expect(batcher.dropped).toBe(2);
    expect(batcher.sent).toBe(3);
    batcher.push([match('e6')]);
    await batcher.flush();
    expect(batcher.sent).toBe(4);
    await expect
      .poll(async () => (await server!.client.queryEvents({ agent_name: 'refused-bot' })).events.map((e) => e.control_execution_id).sort())
      .toEqual(['e1', 'e3', 'e5', 'e6']);
  });

  it('a server that is away keeps them all for the next try: only an answer naming events lets any go', async () => {
    server = await startRealServer();
    const sink = sinkOf(server);
    await server.close();
    const said: number[] = [];
    const failures: unknown[] = [];
    const batcher = new EventBatcher(sink, {
      batchSize: 100, intervalMs: 0, maxBuffered: 1000,
      onError: (error) => failures.push(error),
      onRefused: (_error, refused) => said.push(refused),
    });
    batcher.push([match('e1'), match('e2', { execution_duration_ms: 1e16 })]);
    await batcher.flush();
    expect(failures).toHaveLength(1);
    expect(said).toEqual([]);
    expect(batcher.pending).toBe(2);
    expect(batcher.dropped).toBe(0);
  });
});
