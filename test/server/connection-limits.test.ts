/**
 * Request and header timeouts, the connection cap and closing after a 401, on a real
 * server over real sockets. Waits are upper bounds for the server to act, never measured.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { ServerHandle } from '../../src/server/start.js';
import { parseAnswer, rawRequest, startRawServer } from './raw-http.js';

let handle: ServerHandle | undefined;
afterEach(async () => {
  await handle?.close();
  handle = undefined;
});

const ADMIN = 'admin-key-for-connection-tests';

/** A socket that has sent `text` and collects what comes back. */
function openSocket(port: number, text: string): Promise<{ socket: net.Socket; received: () => string; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    socket.on('data', (d: Buffer) => (got += d.toString('utf8')));
    const closed = new Promise<void>((done) => socket.on('close', () => done()));
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      if (text) socket.write(text);
      resolve({ socket, received: () => got, closed });
    });
    socket.once('error', reject);
  });
}

describe('request timeouts', () => {
  it('a body that never finishes gets a 408 problem and the connection is closed', async () => {
    let port: number;
    ({ handle, port } = await startRawServer({ GUARD_REQUEST_TIMEOUT_MS: '400', GUARD_HEADERS_TIMEOUT_MS: '300' }));
    const answer = await rawRequest(
      port,
      'POST /api/v1/evaluation HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"agent_name":',
      10_000,
    );
    expect(answer.closed).toBe(true);
    expect(answer.status).toBe(408);
    expect(answer.headers['content-type']).toContain('application/problem+json');
    expect(JSON.parse(answer.body)).toMatchObject({ status: 408, error_code: 'request_timeout' });
  });

  it('headers that never finish are cut off the same way', async () => {
    let port: number;
    ({ handle, port } = await startRawServer({ GUARD_REQUEST_TIMEOUT_MS: '400', GUARD_HEADERS_TIMEOUT_MS: '300' }));
    const answer = await rawRequest(port, 'GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: a', 10_000);
    expect(answer.closed).toBe(true);
    expect(answer.status).toBe(408);
  });

  it('the live stream outlives the request timeout and still delivers events', async () => {
    let port: number;
    ({ handle, port } = await startRawServer({ OBSERVABILITY_ENABLED: 'true', GUARD_REQUEST_TIMEOUT_MS: '200', GUARD_HEADERS_TIMEOUT_MS: '100' }));
    const stream = await openSocket(port, 'GET /api/v1/observability/events/stream HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await expect.poll(() => stream.received().includes(': connected'), { interval: 20, message: 'the stream to open' }).toBe(true);
    // Many times the request timeout and Node's checking interval.
    await new Promise((r) => setTimeout(r, 1500));
    const base = handle.url;
    const headers = { 'content-type': 'application/json' };
    const control = { name: 'block-drop', data: { selector: { path: 'input.query' }, evaluator: { name: 'regex', config: { pattern: 'DROP' } }, action: { decision: 'deny' } } };
    const created = (await (await fetch(`${base}/api/v1/controls`, { method: 'PUT', headers, body: JSON.stringify(control) })).json()) as { control_id: number };
    await fetch(`${base}/api/v1/agents/initAgent`, { method: 'POST', headers, body: JSON.stringify({ agent_name: 'bot' }) });
    await fetch(`${base}/api/v1/agents/bot/controls/${created.control_id}`, { method: 'POST', headers });
    const evaluated = await fetch(`${base}/api/v1/evaluation`, {
      method: 'POST', headers, body: JSON.stringify({ agent_name: 'bot', stage: 'pre', step: { type: 'tool', name: 'q', input: { query: 'DROP x' } } }),
    });
    expect(evaluated.status).toBe(200);
    await expect.poll(() => /event: evaluation/.test(stream.received()), { interval: 20, message: 'the evaluation event' }).toBe(true);
    expect(stream.socket.destroyed).toBe(false);
    expect(parseAnswer(stream.received(), false).status).toBe(200);
    stream.socket.destroy();
  });
});

describe('the connection cap', () => {
  it('closes connections past GUARD_MAX_CONNECTIONS at once and accepts again when one ends', async () => {
    let port: number;
    ({ handle, port } = await startRawServer({ GUARD_MAX_CONNECTIONS: '3' }));
    const keepAlive = 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n';
    const held = await Promise.all([0, 1, 2].map(() => openSocket(port, keepAlive)));
    for (const h of held) await expect.poll(() => h.received().includes('healthy'), { interval: 20, message: 'a held connection to be answered' }).toBe(true);
    const refused = await rawRequest(port, 'GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', 5000);
    expect(refused.closed).toBe(true);
    expect(refused.text).toBe('');
    held[0]!.socket.destroy();
    await held[0]!.closed;
    await expect.poll(() => handle!.app.server.listening, { interval: 20, message: 'the server' }).toBe(true);
    // The server learns of the closed socket a moment after the client does.
    const accepted = () => rawRequest(port, 'GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n', 5000);
    await expect.poll(async () => (await accepted()).status, { interval: 50, message: 'a connection accepted again' }).toBe(200);
    for (const h of held) h.socket.destroy();
  });
});

describe('refused requests with a body', () => {
  it('a 401 on a request whose body is still arriving closes the connection', async () => {
    let port: number;
    ({ handle, port } = await startRawServer({ GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: ADMIN }));
    const answer = await rawRequest(
      port,
      'POST /api/v1/evaluation HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"agent_name":',
      10_000,
    );
    expect(answer.status).toBe(401);
    expect(answer.headers.connection).toBe('close');
    expect(answer.closed).toBe(true);
  });

  it('a body-less 401 keeps the connection for the next request', async () => {
    let port: number;
    ({ handle, port } = await startRawServer({ GUARD_API_KEY_ENABLED: 'true', GUARD_ADMIN_API_KEYS: ADMIN }));
    const answer = await rawRequest(port, 'GET /api/v1/agents HTTP/1.1\r\nHost: localhost\r\n\r\n', 500);
    expect(answer.status).toBe(401);
    expect(answer.closed).toBe(false);
  });
});
