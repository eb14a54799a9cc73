/**
 * The HTTP face attacked (issue #39): what a client may send that the spec's happy path
 * never does. Resumable streams bounded over all sessions, not only per session; a client
 * that never reads its stream; Last-Event-ID abused (huge, NUL, several, out of range);
 * a session id used after DELETE; Origin and Host spellings against the DNS-rebinding
 * check; Authorization spellings, two credentials, a token in the query. Raw HTTP
 * (node:http, node:net) where the malformed request is the point.
 */
import { connect as connectSocket } from 'node:net';
import { request, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestGateway } from './mcp-http-gateway.js';
import { parseSse as parse, readUntil, type SseEvent as Event } from './sse-read.js';

const VERSION = '2025-11-25';
const TOKEN = 'attack-token-0123456789abcdef';
const BOTH = 'application/json, text/event-stream';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close().catch(() => undefined);
});

const callTool = (id: number, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) => ({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta && { _meta: meta }) },
});

interface Session {
  sid: string;
  post: (body: unknown, accept?: string) => Promise<Response>;
  get: (lastEventId?: string) => Promise<Response>;
}

/** A session opened over plain HTTP (initialize, then notifications/initialized). */
async function session(url: string, headers: Record<string, string> = {}): Promise<Session> {
  const send = (body: unknown, accept: string, sid?: string) => fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, ...headers, ...(sid && { 'mcp-session-id': sid, 'mcp-protocol-version': VERSION }) },
    body: JSON.stringify(body),
  });
  const init = await send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'attacker', version: '1' } } }, BOTH);
  expect(init.status).toBe(200);
  const sid = init.headers.get('mcp-session-id')!;
  await init.text();
  expect((await send({ jsonrpc: '2.0', method: 'notifications/initialized' }, BOTH, sid)).status).toBe(202);
  return {
    sid,
    post: (body, accept = BOTH) => send(body, accept, sid),
    get: (lastEventId) => fetch(url, { headers: { accept: 'text/event-stream', ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': VERSION, ...(lastEventId && { 'last-event-id': lastEventId }) } }),
  };
}


/** The number a chatter log line carries ("<n> ccc..."). */
const chatterOf = (events: Event[]) => events.flatMap((e) => (e.message?.method === 'notifications/message' ? [Number(String((e.message.params as { data: string }).data).split(' ')[0])] : []));

/** Sends `text` as it is on a new connection; the status of the answer (0 when the connection closes without one). */
function raw(url: string, text: string): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connectSocket(Number(port), hostname, () => socket.end(text));
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.once('error', reject);
    socket.once('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0), text: received }));
  });
}

/** A request with its headers as given (repeats kept; a Host unless one is given), its status and what came after the status line. */
async function send(url: string, method: string, headers: Array<[string, string]>, path = '/mcp'): Promise<{ status: number; body: string }> {
  const host: Array<[string, string]> = headers.some(([name]) => name.toLowerCase() === 'host') ? [] : [['Host', new URL(url).host]];
  const lines = [...host, ...headers, ['Connection', 'close']].map(([name, value]) => `${name}: ${value}`);
  const answer = await raw(url, [`${method} ${path} HTTP/1.1`, ...lines, '', ''].join('\r\n'));
  return { status: answer.status, body: answer.text };
}

describe('resumable streams: bounded over all sessions, and for a client that never reads', () => {
  it('holds at most maxTotalBytes over all sessions: one session\'s events push out another\'s, and its resume is refused (410)', { timeout: 60_000 }, async () => {
    const { gw } = await startTestGateway(cleanup, { agentName: 'attack', held: { maxTotalBytes: 500_000 } });
    const a = await session(gw.url);
    const first = parse(await (await a.post(callTool(1, 'slow', { steps: 1 }, { progressToken: 't' }), 'text/event-stream, application/json')).text());
    expect(first.map((e) => e.id?.split('.').slice(1).join('.'))).toEqual(['1.0', '1.1', '1.2']);
    // Within the session's own bounds, its events are held: a resume from the priming event replays them.
    expect(parse(await (await a.get(first[0]!.id)).text())).toHaveLength(2);

    // Another session sends 1,000,000 bytes, within its own 1 MiB but twice the gateway's bound.
    const b = await session(gw.url);
    const chatter = parse(await (await b.post(callTool(1, 'chatter', { count: 10, bytes: 100_000 }), 'text/event-stream, application/json')).text());
    expect(chatterOf(chatter)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const gone = await a.get(first[0]!.id);
    expect(gone.status).toBe(410);
    expect(((await gone.json()) as { error: { message: string } }).error.message).toContain('500000 bytes over all sessions');
    // The newest events stay: b's last ones resume.
    const tail = parse(await (await b.get(chatter.at(-3)!.id)).text());
    expect(tail.map((e) => e.id)).toEqual(chatter.slice(-2).map((e) => e.id));
  });

  it('ends the stream of a client that does not read it (past 1 MiB unread) and sends the rest elsewhere, none lost', { timeout: 120_000 }, async () => {
    const { gw, reports } = await startTestGateway(cleanup, { agentName: 'attack', held: { maxBytes: 32 * 1024 * 1024, maxTotalBytes: 32 * 1024 * 1024 } });
    const s = await session(gw.url);
    const { hostname, port } = new URL(gw.url);
    // The GET stream, opened and then never read (until the server is done writing).
    const stalled = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request({ host: hostname, port, path: '/mcp', headers: { accept: 'text/event-stream', 'mcp-session-id': s.sid, 'mcp-protocol-version': VERSION }, agent: false }, (res) => {
        res.pause();
        resolve(res);
      });
      req.once('error', reject);
      req.end();
    });
    expect(stalled.statusCode).toBe(200);
    // 100 log lines of 200 kB: 20 MB, more than the sockets' buffers take. Once the GET
    // stream is cut, the rest go where the gateway sends such lines with no GET stream open:
    // the waiting call's response, turned into an SSE stream.
    const answer = await s.post(callTool(1, 'chatter', { count: 100, bytes: 200_000 }));
    expect(answer.headers.get('content-type')).toBe('text/event-stream');
    const after = parse(await answer.text());
    expect(after.at(-1)!.message).toMatchObject({ id: 1, result: { content: [{ text: 'sent 100' }] } });
    await expect.poll(() => reports.some((l) => l.includes('bytes of an SSE stream unread'))).toBe(true);

    // Read now: what was written before the cut, then the end (the gateway kept no more for this connection).
    let text = '';
    stalled.setEncoding('utf8');
    stalled.on('data', (chunk: string) => (text += chunk));
    stalled.resume();
    await new Promise((resolve) => stalled.once('end', resolve));
    const before = parse(text);
    const seen = chatterOf(before);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.length).toBeLessThan(100);
    // The line that found the stream unread is held for the GET stream: a resume from the last event read gets it.
    const resumed = await s.get(before.at(-1)!.id);
    expect(resumed.status).toBe(200);
    const held = chatterOf(await readUntil(resumed, parse, (e) => chatterOf([e]).length > 0));
    // Nothing lost, nothing twice, each stream in order.
    expect(held).toEqual([seen.length + 1]);
    expect([...seen, ...held, ...chatterOf(after)]).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
  });
});

describe('Last-Event-ID abused, and a session id used after DELETE', () => {
  it('answers 400 or 431 to huge, NUL, repeated, negative and overflowing ids, and the session goes on', { timeout: 30_000 }, async () => {
    const { gw } = await startTestGateway(cleanup, { agentName: 'attack' });
    const s = await session(gw.url);
    const [priming] = await readUntil(await s.post(callTool(1, 'slow', { steps: 1 }), 'text/event-stream, application/json'), parse, (e) => e.id !== undefined);
    const id = priming!.id!;
    const tag = id.split('.')[0]!;
    const getWith = (lines: string[]) => raw(gw.url, ['GET /mcp HTTP/1.1', `Host: ${new URL(gw.url).host}`, 'Accept: text/event-stream', `Mcp-Session-Id: ${s.sid}`, `MCP-Protocol-Version: ${VERSION}`, ...lines, 'Connection: close', '', ''].join('\r\n'));

    // Larger than Node's header limit: refused before the gateway sees it.
    expect((await getWith([`Last-Event-ID: ${tag}.1.${'9'.repeat(20_000)}`])).status).toBe(431);
    // A NUL in a header value is no HTTP.
    expect((await getWith([`Last-Event-ID: ${id}\0.1.0`])).status).toBe(400);
    for (const value of [`${tag}.1.-1`, `${tag}.-1.0`, `${tag}.1.${'9'.repeat(16)}`, `${tag}.${'9'.repeat(15)}.0`, `${tag}.1.1e3`, `${tag}.1.0x1`, `${tag}.1.`, `${tag}..0`, `${tag}.1.0 `.repeat(2)]) {
      const answer = await getWith([`Last-Event-ID: ${value}`]);
      expect(answer.status, value).toBe(400);
      expect(answer.text).toContain('not the id of an event of this session');
    }
    // Two ids, even two valid ones: no single stream to resume.
    expect((await getWith([`Last-Event-ID: ${id}`, `Last-Event-ID: ${id}`])).status).toBe(400);
    // The session, and its stream, are unharmed.
    expect((await s.get(id)).status).toBe(200);
  });

  it('answers 404 to every use of a session id after DELETE, a resume included, and never issues it again', { timeout: 30_000 }, async () => {
    const { gw } = await startTestGateway(cleanup, { agentName: 'attack' });
    const s = await session(gw.url);
    const events = parse(await (await s.post(callTool(1, 'slow', { steps: 1 }), 'text/event-stream, application/json')).text());
    const deleted = await fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': s.sid } });
    expect(deleted.status).toBe(200);
    expect((await s.get(events[0]!.id)).status).toBe(404);
    expect((await s.get()).status).toBe(404);
    expect((await s.post(callTool(2, 'run_sql', { query: 'select 1' }))).status).toBe(404);
    expect((await fetch(gw.url, { method: 'DELETE', headers: { 'mcp-session-id': s.sid } })).status).toBe(404);
    const next = await session(gw.url);
    expect(next.sid).not.toBe(s.sid);
    expect(gw.sessionCount).toBe(1);
  });
});

describe('Origin and Host spellings against the DNS-rebinding check', () => {
  it('refuses a null, foreign-port, other-scheme, trailing-dot or doubled Origin, and takes a listed one in any case', { timeout: 30_000 }, async () => {
    const { gw } = await startTestGateway(cleanup, { agentName: 'attack', allowedOrigins: ['https://app.example.com'] });
    // No session: 400 once Origin and Host pass, 403 when refused.
    const getWith = (headers: Array<[string, string]>) => send(gw.url, 'GET', [['accept', 'text/event-stream'], ...headers]);
    for (const origin of ['null', 'https://app.example.com:8443', 'http://app.example.com', 'https://app.example.com.', 'https://app.example.com/', 'https://app.example.com.evil.com', 'https://evil.com#https://app.example.com', '']) {
      expect((await getWith([['origin', origin]])).status, origin).toBe(403);
    }
    expect((await getWith([['origin', 'https://app.example.com'], ['origin', 'https://evil.com']])).status).toBe(403);
    expect((await getWith([['origin', 'https://evil.com'], ['origin', 'https://app.example.com']])).status).toBe(403);
    // Scheme and host are case-insensitive (RFC 6454): the same origin.
    expect((await getWith([['origin', 'HTTPS://APP.Example.COM']])).status).toBe(400);
  });

  it('a loopback gateway refuses a Host that is not a loopback name, however spelled', { timeout: 30_000 }, async () => {
    const { gw } = await startTestGateway(cleanup, { agentName: 'attack' });
    const { port } = new URL(gw.url);
    const getWith = (host: string) => send(gw.url, 'GET', [['accept', 'text/event-stream'], ['host', host]]);
    for (const host of [`localhost.:${port}`, `127.0.0.1.nip.io:${port}`, `evil.com:${port}`, `localhost:${port}@evil.com`, `[::ffff:127.0.0.1]:${port}`, `127.1:${port}`, `0x7f000001:${port}`, `localhost.evil.com:${port}`, '']) {
      expect((await getWith(host)).status, host).toBe(403);
    }
    for (const host of [`LOCALHOST:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost']) {
      expect((await getWith(host)).status, host).toBe(400);
    }
    // HTTP/1.0 without a Host: no name to check, refused.
    expect((await raw(gw.url, 'GET /mcp HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n')).status).toBe(403);
  });
});

describe('credential spellings', () => {
  it('takes the bearer scheme in any case and with extra spaces; refuses two Authorization headers, other schemes and a token in the query, never echoing it', { timeout: 30_000 }, async () => {
    const { gw } = await startTestGateway(cleanup, { agentName: 'attack', auth: { token: TOKEN } });
    // No session: 400 once the credential passes, 401 when refused.
    const getWith = (headers: Array<[string, string]>, path?: string) => send(gw.url, 'GET', [['accept', 'text/event-stream'], ...headers], path);
    for (const value of [`bearer ${TOKEN}`, `BEARER   ${TOKEN}  `, `Bearer\t${TOKEN}`]) {
      expect((await getWith([['authorization', value]])).status, value).toBe(400);
    }
    const refused = [
      [['authorization', `Bearer ${TOKEN}`], ['authorization', 'Bearer wrong']],
      [['authorization', 'Bearer wrong'], ['authorization', `Bearer ${TOKEN}`]],
      [['Authorization', `Bearer ${TOKEN}`], ['AUTHORIZATION', `Bearer ${TOKEN}`]],
      [['authorization', TOKEN]],
      [['authorization', `Basic ${Buffer.from(`user:${TOKEN}`).toString('base64')}`]],
      [['authorization', `Bearer ${TOKEN}x`]],
      [['authorization', `Bearer ${TOKEN.slice(0, -1)}`]],
      [['authorization', `Bearer Bearer ${TOKEN}`]],
      [['authorization', 'Bearer ']],
      [['x-api-key', TOKEN], ['x-api-key', 'wrong']],
    ] satisfies Array<Array<[string, string]>>;
    for (const headers of refused) {
      const answer = await getWith(headers);
      expect(answer.status, JSON.stringify(headers)).toBe(401);
      expect(answer.body).not.toContain(TOKEN.slice(8));
    }
    for (const path of [`/mcp?token=${TOKEN}`, `/mcp?access_token=${TOKEN}`, `/mcp?authorization=Bearer%20${TOKEN}`]) {
      const answer = await getWith([], path);
      expect(answer.status, path).toBe(401);
      expect(answer.body).not.toContain(TOKEN.slice(8));
    }
    expect(gw.sessionCount).toBe(0);
  });
});
