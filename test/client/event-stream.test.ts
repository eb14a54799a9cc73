import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  SseParser,
  backoffDelay,
  followEventStream,
  streamUrl,
  type StreamState,
} from '../../src/client/event-stream.js';
import type { EvaluationSummary } from '../../src/model/stream.js';
import { makeSummary } from '../ui/make-summary.js';

describe('SseParser', () => {
  it('joins chunks split mid-line and mid-field', () => {
    const parser = new SseParser();
    const text = 'event: evaluation\nid: 7\ndata: {"a":1}\n\n';
    const out = [];
    for (const ch of text) out.push(...parser.push(ch));
    expect(out).toEqual([{ event: 'evaluation', data: '{"a":1}', id: '7' }]);
    expect(parser.lastEventId).toBe('7');
  });

  it('joins several data lines with newlines and ignores comments', () => {
    const parser = new SseParser();
    expect(parser.push(': ping\n\n: hello\ndata: one\ndata:two\ndata\n\n')).toEqual([{ event: 'message', data: 'one\ntwo\n', id: null }]);
  });

  it('accepts CRLF and lone CR line ends, even a CRLF split across chunks', () => {
    const parser = new SseParser();
    const out = [...parser.push('event: reload\r'), ...parser.push('\ndata: x\r\n\r'), ...parser.push('\nevent: lagged\rdata: y\r\r')];
    expect(out).toEqual([
      { event: 'reload', data: 'x', id: null },
      { event: 'lagged', data: 'y', id: null },
    ]);
  });

  it('keeps the last id across messages, reads retry, and drops a half message on reset', () => {
    const parser = new SseParser();
    expect(parser.push('retry: 2500\nid: 9\ndata: a\n\ndata: b\n\n')).toEqual([
      { event: 'message', data: 'a', id: '9' },
      { event: 'message', data: 'b', id: '9' },
    ]);
    expect(parser.retryMs).toBe(2500);
    parser.push('data: half');
    parser.reset();
    expect(parser.push('\n\n')).toEqual([]);
  });

  it('does not dispatch a message without data', () => {
    expect(new SseParser().push('event: evaluation\n\n')).toEqual([]);
  });
});

describe('backoff and URL', () => {
  it('doubles up to the cap, with jitter between half and all of it', () => {
    expect(backoffDelay(0, 500, 8000, () => 0)).toBe(250);
    expect(backoffDelay(0, 500, 8000, () => 1)).toBe(500);
    expect(backoffDelay(3, 500, 8000, () => 1)).toBe(4000);
    expect(backoffDelay(10, 500, 8000, () => 1)).toBe(8000);
    expect(backoffDelay(10, 500, 8000, () => 0)).toBe(4000);
  });

  it('puts the server-side filters in the query', () => {
    expect(streamUrl({ server: 'http://h:1', agentName: 'bot', decision: 'deny' })).toBe(
      'http://h:1/api/v1/observability/events/stream?agent_name=bot&decision=deny',
    );
    // A session id is free text: encoded, never able to add a parameter of its own.
    expect(streamUrl({ server: 'http://h:1', sessionId: 'run 1&decision=allow' })).toBe(
      'http://h:1/api/v1/observability/events/stream?session_id=run+1%26decision%3Dallow',
    );
  });
});

describe('followEventStream against a real HTTP server', () => {
  let server: Server | null = null;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    server = null;
  });

  async function listen(handler: (req: IncomingMessage, res: ServerResponse, n: number) => void): Promise<string> {
    let n = 0;
    server = createServer((req, res) => handler(req, res, n++));
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const sse = (res: ServerResponse): void => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
  };

  it('delivers evaluations, reconnects with Last-Event-ID and the API key after the server drops it', async () => {
    const seen: Array<{ key: string | undefined; last: string | undefined; url: string | undefined }> = [];
    const first = makeSummary({ id: 'e1', decision: 'deny' });
    const second = makeSummary({ id: 'e2' });
    const base = await listen((req, res, n) => {
      seen.push({ key: req.headers['x-api-key'] as string, last: req.headers['last-event-id'] as string, url: req.url });
      sse(res);
      if (n === 0) {
        res.write(`: ping\n\nevent: evaluation\nid: e1\ndata: ${JSON.stringify(first)}\n\n`);
        res.write('event: lagged\ndata: {"skipped": 4}\n\nevent: evaluation\ndata: {"not":"a summary"}\n\n');
        res.end();
      } else {
        res.write(`event: evaluation\nid: e2\ndata: ${JSON.stringify(second)}\n\n`);
      }
    });
    const controller = new AbortController();
    const got: EvaluationSummary[] = [];
    const states: string[] = [];
    let lagged = 0;
    let invalid = 0;
    const done = followEventStream(
      { server: base, apiKey: 'k1', agentName: 'support-bot', signal: controller.signal, baseDelayMs: 10, random: () => 0 },
      {
        onEvaluation: (s) => {
          got.push(s);
          if (got.length === 2) controller.abort();
        },
        onLagged: (n) => (lagged += n),
        onInvalid: () => invalid++,
        onState: (s) => states.push(s.kind),
      },
    );
    expect((await done).kind).toBe('closed');
    expect(got.map((s) => s.id)).toEqual(['e1', 'e2']);
    expect(got[0]!.matches[0]!.control_name).toBe('block-sql');
    expect(lagged).toBe(4);
    expect(invalid).toBe(1);
    expect(seen[0]).toEqual({ key: 'k1', last: undefined, url: '/api/v1/observability/events/stream?agent_name=support-bot' });
    expect(seen[1]!.last).toBe('e1');
    expect(states).toEqual(['connecting', 'live', 'reconnecting', 'connecting', 'live', 'closed']);
  });

  it('stops with unauthorized on 401 and does not retry', async () => {
    let calls = 0;
    const base = await listen((_req, res) => {
      calls++;
      res.writeHead(401, { 'content-type': 'application/problem+json' }).end('{"status":401}');
    });
    const final: StreamState = await followEventStream({ server: base, baseDelayMs: 1 }, { onEvaluation: () => {} });
    expect(final.kind).toBe('unauthorized');
    expect(calls).toBe(1);
  });

  it('stops with an error when the path is not an event stream', async () => {
    const base = await listen((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    const final = await followEventStream({ server: base, baseDelayMs: 1 }, { onEvaluation: () => {} });
    expect(final).toMatchObject({ kind: 'error', message: expect.stringMatching(/not an event stream/) });
  });

  it('retries a 503 and a refused connection until the server answers', async () => {
    const states: StreamState[] = [];
    const base = await listen((_req, res, n) => {
      if (n === 0) return void res.writeHead(503).end();
      sse(res);
      res.write(`event: evaluation\ndata: ${JSON.stringify(makeSummary({ id: 'ok' }))}\n\n`);
    });
    const controller = new AbortController();
    await followEventStream(
      { server: base, signal: controller.signal, baseDelayMs: 5, random: () => 1 },
      { onEvaluation: () => controller.abort(), onState: (s) => states.push(s) },
    );
    const retry = states.find((s) => s.kind === 'reconnecting');
    expect(retry).toMatchObject({ kind: 'reconnecting', attempt: 1, reason: 'HTTP 503' });
  });

  it('treats a silent connection as dead after the idle timeout', async () => {
    const reasons: string[] = [];
    const base = await listen((_req, res, n) => {
      sse(res);
      res.flushHeaders();
      if (n > 0) res.write(`event: evaluation\ndata: ${JSON.stringify(makeSummary())}\n\n`);
    });
    const controller = new AbortController();
    await followEventStream(
      { server: base, signal: controller.signal, baseDelayMs: 5, idleTimeoutMs: 100 },
      {
        onEvaluation: () => controller.abort(),
        onState: (s) => {
          if (s.kind === 'reconnecting') reasons.push(s.reason);
        },
      },
    );
    expect(reasons[0]).toMatch(/no data for 100 ms/);
  });
});
