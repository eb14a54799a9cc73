/**
 * What happens to the rest of a body over GUARD_BODY_LIMIT_BYTES. Fastify answers 413 as
 * soon as it knows and asks for the connection to be closed; Node then destroys the socket
 * while the client is still writing, the client's kernel receives a reset, and the 413
 * is lost with it: Node's fetch reports `fetch failed` (EPIPE), curl "connection reset".
 * Instead the server reads and discards the rest first, up to a bound in bytes and in
 * time, and answers when the body has ended: the client has finished writing and reads the
 * 413 like any answer, and the connection stays usable. Past the bound the 413 is written,
 * the server ends its side (the client reads the answer, then the end of the stream) and
 * closes shortly after.
 */
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Problem } from './problem.js';

/** At least this much is read and discarded, however small the body limit. */
const MIN_DRAIN_BYTES = 4 * 1024 * 1024;
/** Longest the rest of a body is read before the server answers and ends the connection. */
export const DRAIN_MS = 5000;
/** After ending its side, how long the server goes on discarding before it closes. */
const LINGER_MS = 1000;

/** How many bytes of an over-limit body are read and discarded: twice the limit, at least 4 MiB. */
export function drainBytesOf(bodyLimitBytes: number): number {
  return Math.max(2 * bodyLimitBytes, MIN_DRAIN_BYTES);
}

/**
 * Reads and discards the rest of the request body. True when it ended within the bound
 * (answer as usual, the connection may be reused); false when the bound passed.
 */
export function drainBody(req: IncomingMessage, maxBytes: number, maxMs: number): Promise<boolean> {
  if (req.complete || req.socket.destroyed) return Promise.resolve(!req.socket.destroyed);
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      resolve(ended);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onClose = () => finish(req.complete);
    const timer = setTimeout(() => finish(false), maxMs);
    timer.unref();
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.resume();
  });
}

/**
 * Sends the 413 problem once the rest of the body is read, or past the bound writes it
 * straight to the socket and ends the connection. Returns the reply, sent or hijacked.
 */
export async function sendOverLimit(request: FastifyRequest, reply: FastifyReply, problem: Problem, bodyLimitBytes: number, send: () => FastifyReply): Promise<FastifyReply> {
  const req = request.raw;
  const socket = req.socket;
  const maxBytes = drainBytesOf(bodyLimitBytes);
  // A body declared longer than the bound is not waited for: the answer goes at once.
  const declared = Number(req.headers['content-length']);
  const ended = declared > maxBytes ? false : await drainBody(req, maxBytes, DRAIN_MS);
  // app.inject's requests have no real socket to end; they are answered as usual.
  if (ended || socket.destroyed || !(socket instanceof Socket)) {
    // The whole request was read: nothing forces a close, so the client may reuse the connection.
    if (ended) reply.removeHeader('connection');
    return send();
  }
  reply.hijack();
  const body = JSON.stringify(problem);
  socket.write(
    `HTTP/1.1 413 ${STATUS_CODES[413]}\r\nContent-Type: application/problem+json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  // Half-close, still discarding what arrives: a close with unread data would send a reset,
  // which can make the client's kernel drop the answer it has not read yet.
  socket.end();
  req.resume();
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
  return reply;
}
