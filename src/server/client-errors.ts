/**
 * Problem bodies for the answers given before any route runs: the router's refusals
 * (bad percent-encoding, an over-long path parameter) and Node's HTTP parser's
 * (malformed framing, oversized headers, a request that took too long to arrive).
 * Fastify's own answers to these are plain JSON of another shape; a client must be able
 * to read every 4xx and 5xx of the server the same way.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { problemOf, sendProblem, type Problem } from './problem.js';

/** Fastify's `frameworkErrors` option: the router's refusals as problems. */
export function sendFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  void sendProblem(reply, problemOfFrameworkError(error.code));
}

function problemOfFrameworkError(code: string): Problem {
  // The path is not echoed back: it may be long, and is the client's own anyway.
  switch (code) {
    case 'FST_ERR_BAD_URL':
      return problemOf(400, 'bad_request', 'the URL path has invalid percent-encoding');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return problemOf(414, 'uri_too_long', 'a path segment is longer than the server accepts');
    default:
      return problemOf(400, 'bad_request', 'the request could not be routed');
  }
}

/** Node's parser errors: what to answer, by the error's code. */
export function problemOfClientError(code: string | undefined): Problem {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return problemOf(408, 'request_timeout', 'the request did not arrive in time (GUARD_REQUEST_TIMEOUT_MS, GUARD_HEADERS_TIMEOUT_MS)');
    case 'HPE_HEADER_OVERFLOW':
      return problemOf(431, 'headers_too_large', 'the request line and headers are larger than the server accepts (16 KB)');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return problemOf(400, 'bad_request', 'the chunked body has over-long chunk extensions');
    case undefined:
    default:
      return problemOf(400, 'bad_request', 'the request is not valid HTTP/1.1 (framing, headers or method)');
  }
}

/**
 * Fastify's `clientErrorHandler`: the connection is unusable after a parser error, so the
 * answer is written straight to the socket, then the socket is closed.
 */
export function handleClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) {
    const problem = problemOfClientError(error.code);
    const body = JSON.stringify(problem);
    socket.write(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? 'Error'}\r\n` +
        `Content-Type: application/problem+json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
