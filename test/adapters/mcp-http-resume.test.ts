/**
 * Resumable streams on the HTTP face (MCP spec revision 2025-11-25, "Resumability and
 * Redelivery"), driven with plain fetch and with the MCP SDK's own client: every event has
 * an id, a GET with Last-Event-ID replays the rest of that stream (never another's) and
 * carries it on to its answer, ids of another session or forged ones are refused (400),
 * and a resume past what a session holds is refused (410) rather than answered with a gap.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { HeldBounds } from '../../src/adapters/mcp-http-events.js';
import { startTestGateway } from './mcp-http-gateway.js';
import { parseSse as parse, readUntil, type SseEvent as Event } from './sse-read.js';

const VERSION = '2025-11-25';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close().catch(() => undefined);
});

const gateway = async (held?: Partial<HeldBounds>) => (await startTestGateway(cleanup, { agentName: 'http-resume', ...(held && { held }) })).gw;

const callTool = (id: number, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) => ({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta && { _meta: meta }) },
});

interface Session {
  sid: string;
  /** A POST preferring an SSE answer. */
  stream: (body: unknown) => Promise<Response>;
  /** A POST answered as JSON. */
  json: (body: unknown) => Promise<Response>;
  /** A GET, resuming after `lastEventId` when given. */
  get: (lastEventId?: string) => Promise<Response>;
}

async function session(url: string): Promise<Session> {
  const post = (body: unknown, accept: string, sid?: string) => fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, ...(sid && { 'mcp-session-id': sid, 'mcp-protocol-version': VERSION }) },
    body: JSON.stringify(body),
  });
  const init = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'fetch', version: '1' } } }, 'application/json, text/event-stream');
  const sid = init.headers.get('mcp-session-id')!;
  await init.text();
  expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, 'application/json, text/event-stream', sid)).status).toBe(202);
  return {
    sid,
    stream: (body) => post(body, 'text/event-stream, application/json', sid),
    json: (body) => post(body, 'application/json, text/event-stream', sid),
    get: (lastEventId) => fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': VERSION, ...(lastEventId && { 'last-event-id': lastEventId }) } }),
  };
}


const errorOf = async (response: Response) => ((await response.json()) as { error: { message: string } }).error.message;
const progressOf = (events: Event[]) => events.filter((e) => e.message?.method === 'notifications/progress').map((e) => (e.message!.params as { progress: number }).progress);

describe('resumable SSE streams, over plain HTTP', () => {
  it('primes a POST stream with an id; a GET with it after a dropped connection gets the answer, then the stream ends', { timeout: 30_000 }, async () => {
    const gw = await gateway();
    const s = await session(gw.url);
    const waiting = await s.stream(callTool(1, 'wait_keys', {}));
    expect(waiting.headers.get('content-type')).toBe('text/event-stream');
    const [priming] = await readUntil(waiting, parse, (e) => e.id !== undefined);
    expect(priming).toEqual({ id: expect.stringMatching(/^[\w-]+\.1\.0$/), message: undefined });
    // The client is gone; the call runs on (a disconnection is not a cancellation) and its answer is held.
    expect(await (await s.json(callTool(2, 'release', {}))).json()).toMatchObject({ id: 2, result: { content: [{ text: 'released' }] } });
    const resumed = await s.get(priming!.id);
    expect(resumed.status).toBe(200);
    expect(resumed.headers.get('content-type')).toBe('text/event-stream');
    const replayed = parse(await resumed.text());
    expect(replayed).toEqual([{ id: priming!.id!.replace(/0$/, '1'), message: expect.objectContaining({ id: 1, result: expect.anything() }) }]);
    // The answer's own id: nothing after it, and the stream is over.
    expect(parse(await (await s.get(replayed[0]!.id)).text())).toEqual([]);
  });

  it('replays only the rest of the stream the id belongs to, then carries it on live to its answer', { timeout: 30_000 }, async () => {
    const gw = await gateway();
    const s = await session(gw.url);
    // The GET stream gets a log line (it belongs to no request), then drops.
    const standalone = await s.get();
    const logged = readUntil(standalone, parse, (e) => e.message?.method === 'notifications/message');
    await (await s.json(callTool(1, 'leak', { how: 'clean_log' }))).json();
    const lastOfGet = (await logged).at(-1)!;
    expect(lastOfGet.id).toMatch(/^[\w-]+\.0\.1$/);

    const slow = await s.stream(callTool(2, 'slow', { steps: 4 }, { progressToken: 't' }));
    const before = await readUntil(slow, parse, (e) => e.message?.method === 'notifications/progress');
    const resumed = parse(await (await s.get(before.at(-1)!.id)).text());
    // However the events fell into chunks before the drop: each once, in order, then the answer.
    const all = [...before, ...resumed];
    expect(progressOf(all)).toEqual([1, 2, 3, 4]);
    expect(all.filter((e) => e.message?.id === 2)).toEqual([all.at(-1)]);
    expect(all.at(-1)!.message).toMatchObject({ id: 2, result: { content: [{ text: 'done in 4 steps' }] } });
    const ids = all.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);

    // The GET stream resumed: none of the call's events, only what came for it since.
    const again = await s.get(lastOfGet.id);
    const next = readUntil(again, parse, (e) => e.message?.method === 'notifications/message');
    await (await s.json(callTool(3, 'leak', { how: 'clean_log' }))).json();
    expect((await next).map((e) => e.message?.method ?? e.id)).toEqual(['notifications/message']);
  });

  it('refuses an id of another session, a forged one and a malformed one (400), and a GET without the session (400)', { timeout: 30_000 }, async () => {
    const gw = await gateway();
    const a = await session(gw.url);
    const b = await session(gw.url);
    const [primingA] = await readUntil(await a.stream(callTool(1, 'slow', { steps: 1 })), parse, (e) => e.id !== undefined);
    const [primingB] = await readUntil(await b.stream(callTool(1, 'slow', { steps: 1 })), parse, (e) => e.id !== undefined);
    const [tagB] = primingB!.id!.split('.');
    for (const id of [primingA!.id!, `${tagB}.9.0`, `${tagB}.1.7`, `${tagB}.0.5`, 'garbage', `${tagB}.1.0.0`]) {
      const refused = await b.get(id);
      expect(refused.status, id).toBe(400);
      expect(await errorOf(refused)).toContain('not the id of an event of this session');
    }
    // An empty Last-Event-ID is none: the session's GET stream, opened afresh.
    const fresh = await fetch(gw.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': b.sid, 'mcp-protocol-version': VERSION, 'last-event-id': '' } });
    expect(fresh.status).toBe(200);
    await fresh.body!.cancel();
    // Its own session still resumes it.
    expect((await a.get(primingA!.id)).status).toBe(200);
    const noSession = await fetch(gw.url, { headers: { accept: 'text/event-stream', 'last-event-id': primingA!.id! } });
    expect(noSession.status).toBe(400);
  });

  it('holds a bounded number of events per session: a resume that needs one dropped is refused (410)', { timeout: 30_000 }, async () => {
    const gw = await gateway({ maxEvents: 3 });
    const s = await session(gw.url);
    // Priming (seq 0), progress 1 to 5 (seq 1 to 5), the answer (seq 6): seq 4 to 6 are held.
    const events = parse(await (await s.stream(callTool(1, 'slow', { steps: 5 }, { progressToken: 't' }))).text());
    expect(events).toHaveLength(7);
    const gone = await s.get(events[2]!.id);
    expect(gone.status).toBe(410);
    expect(await errorOf(gone)).toContain('no longer held (a session keeps its newest 3 events');
    const kept = parse(await (await s.get(events[3]!.id)).text());
    expect(kept.map((e) => e.id)).toEqual(events.slice(4).map((e) => e.id));
  });

  it('never holds an event larger than the byte bound: a resume from before it is refused (410)', { timeout: 60_000 }, async () => {
    const gw = await gateway();
    const s = await session(gw.url);
    const events = parse(await (await s.stream(callTool(1, 'big', {}))).text());
    expect(events.map((e) => e.id?.split('.').slice(1).join('.'))).toEqual(['1.0', '1.1']);
    expect((await s.get(events[0]!.id)).status).toBe(410);
  });
});

describe('resumable SSE streams, with the MCP SDK\'s own client', () => {
  it('a call whose stream is cut mid-way resumes with Last-Event-ID: the rest of its progress, and its answer once', { timeout: 30_000 }, async () => {
    const gw = await gateway();
    let cuts = 0;
    // Cuts the first tools/call stream after the chunk holding its first progress event (the socket is closed too).
    const resumedFrom: string[] = [];
    const cutting: typeof fetch = async (input, init) => {
      const lastEventId = new Headers(init?.headers).get('last-event-id');
      if (lastEventId !== null) resumedFrom.push(lastEventId);
      const response = await fetch(input, init);
      if (cuts > 0 || init?.method !== 'POST' || typeof init.body !== 'string' || !init.body.includes('"tools/call"') || !response.body) return response;
      cuts++;
      const upstream = response.body.getReader();
      let progressed = false;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          // The pull after the progress chunk: the client has read it (an error drops chunks still queued).
          if (progressed) {
            await upstream.cancel();
            return controller.error(new Error('connection reset'));
          }
          const { value, done } = await upstream.read();
          if (done) return controller.close();
          progressed = new TextDecoder().decode(value).includes('notifications/progress');
          controller.enqueue(value);
        },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    };
    const transport = new StreamableHTTPClientTransport(new URL(gw.url), {
      fetch: cutting,
      reconnectionOptions: { initialReconnectionDelay: 10, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1, maxRetries: 3 },
    });
    const client = new Client({ name: 'sdk', version: '1.0.0' });
    const errors: string[] = [];
    await client.connect(transport);
    client.onerror = (error) => void errors.push(error.message);
    cleanup.push(() => client.close());
    const progress: number[] = [];
    const result = (await client.callTool({ name: 'slow', arguments: { steps: 5 } }, CallToolResultSchema, { onprogress: (p) => progress.push(p.progress) })) as CallToolResult;
    expect(cuts).toBe(1);
    expect(resumedFrom).toEqual([expect.stringMatching(/^[\w-]+\.1\.[1-5]$/)]);
    expect(errors.some((e) => /disconnected/.test(e))).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'done in 5 steps' }]);
    // Each progress event once, in order (the SDK's client may drop one read in the chunk of its answer).
    expect(progress[0]).toBe(1);
    expect(progress).toEqual([...new Set(progress)].sort());
    // The answer came once: a second would be an answer to no request.
    await new Promise((r) => setTimeout(r, 100));
    expect(errors.filter((e) => /unknown message ID/i.test(e))).toEqual([]);
    expect((await client.callTool({ name: 'run_sql', arguments: { query: 'select 1' } }) as CallToolResult).content).toEqual([{ type: 'text', text: '3 rows for select 1' }]);
  });
});
