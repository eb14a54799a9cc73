/**
 * Events posted from a worker thread (event-thread.ts, the MCP gateway's way): the request
 * is the one the in-thread client makes, failures reach the batcher as rejections (so its
 * retry and order hold), and an agent using it delivers the same events as one without.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GuardClient } from '../../src/client/index.js';
import { EventThreadSink } from '../../src/sdk/event-thread.js';
import { EventBatcher } from '../../src/sdk/events.js';
import { init, type GuardAgent, type GuardLogger } from '../../src/sdk/index.js';
import { seedSupportBot, startRealServer, type RunningServer } from './real-server.js';

interface Seen {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingMessage['headers'];
  body: string;
}

const closers: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A plain HTTP server that records each request and answers with `answer` (or never, when it returns false). */
async function recorder(answer: (res: ServerResponse) => boolean = (res) => (res.writeHead(202, { 'content-type': 'application/json' }).end('{"received":3,"enqueued":3,"dropped":0}'), true)): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const open = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (!answer(res)) open.add(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => {
    for (const res of open) res.destroy();
    server.closeAllConnections();
    server.close(resolve);
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

function sinkFor(base: string, timeoutMs = 5000): EventThreadSink {
  const sink = new EventThreadSink({ url: `${base}/api/v1/observability/events`, apiKey: 'k-123', timeoutMs });
  closers.push(() => sink.close());
  return sink;
}

const EVENTS = ['{"a":1}', '{"b":"é \\u2028"}', '{"c":[1,2]}'];
const deaf = (): boolean => false;

describe('EventThreadSink', () => {
  it('makes the request the in-thread client makes: method, path, headers and body byte for byte', async () => {
    const { url, seen } = await recorder();
    await new GuardClient({ serverUrl: url, apiKey: 'k-123' }).ingestEventsJson(EVENTS);
    await sinkFor(url).ingestEventsJson(EVENTS);
    expect(seen).toHaveLength(2);
    const [direct, threaded] = seen as [Seen, Seen];
    expect(threaded.method).toBe('POST');
    expect(threaded.url).toBe(direct.url);
    expect(threaded.body).toBe(direct.body);
    for (const header of ['content-type', 'accept', 'x-api-key', 'content-length']) expect(threaded.headers[header]).toBe(direct.headers[header]);
  });

  it('sends a batch handed to the thread in slices as one request, every event in order, and sends after it apart', async () => {
    const { url, seen } = await recorder();
    const sink = sinkFor(url);
    const batch = Array.from({ length: 1000 }, (_, i) => `{"n":${i}}`);
    await Promise.all([sink.ingestEventsJson(batch), sink.ingestEventsJson(EVENTS)]);
    expect(seen.map((s) => s.body).sort((a, b) => a.length - b.length)).toEqual([`{"events":[${EVENTS.join(',')}]}`, `{"events":[${batch.join(',')}]}`]);
  });

  it('rejects with the status when the server refuses, and when nothing listens', async () => {
    const { url } = await recorder((res) => (res.writeHead(503).end('busy'), true));
    // The error the in-thread client gives (ApiError): the batcher reads a refusal the same way from either.
    const inThread = await new GuardClient({ serverUrl: url }).ingestEventsJson(EVENTS).catch((e: unknown) => e);
    expect(inThread).toMatchObject({ name: 'ApiError', status: 503 });
    await expect(sinkFor(url).ingestEventsJson(EVENTS)).rejects.toMatchObject({ name: 'ApiError', status: 503, message: (inThread as Error).message });
    const gone = await recorder();
    await closers.pop()!();
    await expect(sinkFor(gone.url).ingestEventsJson(EVENTS)).rejects.toThrow(/failed: .*ECONNREFUSED/);
  });

  it('rejects an answer of the wrong shape, as the in-thread client does', async () => {
    const { url } = await recorder((res) => (res.writeHead(202, { 'content-type': 'application/json' }).end('{"received":3}'), true));
    await expect(new GuardClient({ serverUrl: url }).ingestEventsJson(EVENTS)).rejects.toThrow('not what the API promises');
    await expect(sinkFor(url).ingestEventsJson(EVENTS)).rejects.toThrow('not what the API promises');
  });

  it('rejects a send the server does not answer within the time limit', async () => {
    const { url } = await recorder(deaf);
    await expect(sinkFor(url, 100).ingestEventsJson(EVENTS)).rejects.toThrow('no answer within 100 ms');
  });

  it('rejects a send in flight when closed, and the batcher keeps its events in order for the next try', async () => {
    const { url, seen } = await recorder(deaf);
    const sink = sinkFor(url);
    const errors: string[] = [];
    const batcher = new EventBatcher(sink, { batchSize: 100, intervalMs: 0, maxBuffered: 100, onError: (e) => errors.push(String(e)) });
    batcher.pushJson(EVENTS);
    const sending = batcher.flush();
    await expect.poll(() => seen.length).toBe(1);
    await sink.close();
    await sending;
    expect(errors).toEqual(['Error: the event thread was stopped']);
    expect(batcher.pending).toBe(3);
    // A send after a close starts a thread afresh; the events go in their order.
    const next = await recorder();
    const again = new EventBatcher(sinkFor(next.url), { batchSize: 100, intervalMs: 0, maxBuffered: 100, onError: () => undefined });
    again.pushJson(EVENTS);
    await again.close();
    expect(next.seen[0]!.body).toBe(`{"events":[${EVENTS.join(',')}]}`);
  });
});

describe('an agent with eventThread', () => {
  let server: RunningServer;
  const logger: GuardLogger & { lines: string[] } = { lines: [], info: () => undefined, warn: (m) => logger.lines.push(m) };

  async function agentOn(name: string): Promise<GuardAgent> {
    const agent = await init({ agentName: name, serverUrl: server.url, refreshIntervalSeconds: 0, eventFlushIntervalSeconds: 60, eventThread: true, logger });
    closers.push(() => agent.shutdown());
    return agent;
  }

  it('delivers the events an in-thread agent delivers, field for field but ids and times', async () => {
    server = await startRealServer();
    closers.push(() => server.close());
    const ids = await seedSupportBot(server.client, 'bot-a');
    await server.client.initAgent({ agent_name: 'bot-b' });
    for (const id of Object.values(ids)) await server.client.link('bot-b', id);
    const threaded = await agentOn('bot-a');
    const inThread = await init({ agentName: 'bot-b', serverUrl: server.url, refreshIntervalSeconds: 0, eventFlushIntervalSeconds: 60, logger });
    for (const agent of [threaded, inThread]) {
      for (const query of ['drop table t', 'select * from t', 'select 1']) {
        // The DROP is denied (raised): its events are recorded all the same.
        await agent.check({ type: 'tool', name: 'run_sql', input: { query } }, 'pre', { sessionId: 's-1' }).catch(() => undefined);
      }
    }
    // The DROP's and the SELECT *'s matches, and one rollup per control of its non-matches (run_sql, session s-1).
    expect(threaded.pendingEvents).toBe(4);
    await threaded.shutdown();
    await inThread.shutdown();
    expect(threaded.pendingEvents).toBe(0);
    const matchedOf = async (agent_name: string) => {
      const { events } = await server.client.queryEvents({ agent_name, matched: true, limit: 100 });
      return events
        .map(({ control_execution_id: _e, trace_id: _t, span_id: _s, timestamp: _ts, execution_duration_ms: _d, agent_name: _a, control_id: _c, ...rest }) => rest)
        .sort((x, y) => x.control_name.localeCompare(y.control_name));
    };
    await vi.waitFor(async () => expect((await matchedOf('bot-a')).length).toBeGreaterThan(0), { timeout: 30_000 });
    await vi.waitFor(async () => expect(await matchedOf('bot-a')).toEqual(await matchedOf('bot-b')), { timeout: 30_000 });
    await vi.waitFor(async () => {
      const { totals } = await server.client.stats({ agent_name: 'bot-a', time_range: '1h' });
      expect(totals.executions).toBe(6);
    }, { timeout: 30_000 });
  });

  it('keeps events for retry while the server is down, and says why', async () => {
    server = await startRealServer();
    closers.push(() => server.close());
    await seedSupportBot(server.client, 'bot-c');
    const agent = await agentOn('bot-c');
    await server.close();
    await agent.check({ type: 'tool', name: 'run_sql', input: { query: 'select 1' } }, 'pre');
    await agent.flushEvents();
    expect(agent.pendingEvents).toBe(2);
    expect(logger.lines.some((l) => /could not send events \(2 kept for retry\): POST \/observability\/events failed/.test(l))).toBe(true);
  });
});
