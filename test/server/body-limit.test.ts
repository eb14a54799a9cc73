/**
 * A body over GUARD_BODY_LIMIT_BYTES is answered 413 with its problem body, and every
 * client gets to read it (issue #35.3). The server used to stop reading and close at
 * once, so a client still writing its body (Node's fetch on a reused keep-alive
 * connection) saw EPIPE or "fetch failed" instead of the answer.
 */
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from 'undici';
import { GuardClient } from '../../src/client/index.js';
import { ApiError } from '../../src/errors.js';
import type { ServerHandle } from '../../src/server/start.js';
import { startRawServer } from './raw-http.js';

const LIMIT = 65_536;
let handle: ServerHandle;
let port: number;
let base: string;
beforeEach(async () => {
  ({ handle, port } = await startRawServer({ GUARD_BODY_LIMIT_BYTES: String(LIMIT) }));
  base = `http://127.0.0.1:${port}`;
});
afterEach(async () => {
  await handle.close();
});

const evaluationBody = (size: number) => JSON.stringify({ agent_name: 'a', stage: 'pre', step: { type: 'tool', name: 'x', input: 'z'.repeat(size) } });

describe('a body over the limit', () => {
  it.each([
    ['twice the limit', 2 * LIMIT],
    ['ten times the limit', 10 * LIMIT],
    ['just over the limit', LIMIT + 1],
  ])('%s on a reused keep-alive connection: Node’s fetch reads the 413 problem', async (_what, size) => {
    // One connection, reused: the case where the server's early close surfaced as EPIPE.
    const dispatcher = new Agent({ connections: 1, pipelining: 1 });
    try {
      for (let round = 0; round < 3; round++) {
        const small = await fetch(`${base}/health`, { dispatcher });
        expect(small.status).toBe(200);
        await small.text();
        const res = await fetch(`${base}/api/v1/evaluation`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: evaluationBody(size), dispatcher });
        expect(res.status).toBe(413);
        const problem = (await res.json()) as { error_code: string; detail: string };
        expect(problem.error_code).toBe('payload_too_large');
        expect(problem.detail).toContain(String(LIMIT));
      }
    } finally {
      await dispatcher.close();
    }
  });

  it('the client’s ApiError carries the 413 and names the limit', async () => {
    const client = new GuardClient({ serverUrl: base });
    for (let i = 0; i < 3; i++) {
      await client.health();
      const error = await client.evaluate({ agent_name: 'a', stage: 'pre', step: { type: 'tool', name: 'x', input: 'z'.repeat(4 * LIMIT) } }).then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(413);
      expect((error as ApiError).message).toContain(String(LIMIT));
    }
  });

  it('a raw socket writing its whole body in pieces (Connection: close) gets the 413 problem, then the close', async () => {
    const body = evaluationBody(3 * LIMIT);
    const answer = await new Promise<{ text: string; writeError: string | null }>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      let writeError: string | null = null;
      socket.on('data', (d: Buffer) => chunks.push(d));
      socket.on('error', (e: NodeJS.ErrnoException) => (writeError = e.code ?? e.message));
      socket.on('close', () => resolve({ text: Buffer.concat(chunks).toString('utf8'), writeError }));
      socket.write(`POST /api/v1/evaluation HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`);
      // In pieces, each after the previous one was taken, as a client on a slow link would.
      let at = 0;
      const next = () => {
        if (at >= body.length) return;
        const piece = body.slice(at, at + 16_384);
        at += piece.length;
        socket.write(piece, (err) => (err ? undefined : setImmediate(next)));
      };
      next();
      setTimeout(() => socket.destroy(), 5000).unref();
    });
    expect(answer.text).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.text).toContain('payload_too_large');
    expect(answer.writeError).toBeNull();
  });

  it('a body far over the drain bound is answered 413, then the connection is closed', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (d: Buffer) => chunks.push(d));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
      socket.write(`POST /api/v1/evaluation HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{`);
      const piece = Buffer.alloc(65_536, 0x61);
      const pump = () => {
        if (socket.destroyed) return;
        if (socket.write(piece)) setImmediate(pump);
        else socket.once('drain', pump);
      };
      pump();
    });
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
  });
});
