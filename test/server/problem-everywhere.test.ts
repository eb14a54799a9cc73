/**
 * Every 4xx and 5xx the server sends is an application/problem+json body, including the
 * answers Fastify and Node's HTTP parser give before any route runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerHandle } from '../../src/server/start.js';
import { rawRequest, startRawServer, type RawAnswer } from './raw-http.js';

let handle: ServerHandle;
let port: number;
beforeAll(async () => {
  ({ handle, port } = await startRawServer());
});
afterAll(async () => {
  await handle.close();
});

function expectProblem(answer: RawAnswer, status: number, errorCode: string): void {
  expect(answer.status, answer.text.slice(0, 300)).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  expect(body).toMatchObject({ status, error_code: errorCode });
  expect(body.type).toBe(`https://guardctl.dev/problems/${errorCode.replaceAll('_', '-')}`);
  expect(typeof body.title).toBe('string');
  expect(typeof body.detail).toBe('string');
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
}

const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${extra}Connection: close\r\n\r\n`;

describe('problem bodies before any route runs', () => {
  it('bad percent-encoding in the path (FST_ERR_BAD_URL) is a 400 problem', async () => {
    const answer = await rawRequest(port, get('/api/v1/controls/%E0%A4%A'));
    expectProblem(answer, 400, 'bad_request');
    expect(JSON.parse(answer.body).detail).toContain('percent-encoding');
  });

  it('a path parameter over the router limit is a 414 problem, without echoing the path', async () => {
    const answer = await rawRequest(port, get(`/api/v1/controls/${'7'.repeat(600)}`));
    expectProblem(answer, 414, 'uri_too_long');
    expect(answer.body).not.toContain('7'.repeat(50));
  });

  it('a URL larger than the header limit is a 431 problem', async () => {
    const answer = await rawRequest(port, get(`/api/v1/controls?x=${'1'.repeat(20_000)}`));
    expectProblem(answer, 431, 'headers_too_large');
  });

  it('malformed framing (a non-numeric Content-Length) is a 400 problem', async () => {
    const answer = await rawRequest(port, 'POST /api/v1/evaluation HTTP/1.1\r\nHost: localhost\r\nContent-Length: abc\r\n\r\n{}');
    expectProblem(answer, 400, 'bad_request');
    expect(answer.closed).toBe(true);
  });

  it('a method the HTTP parser does not know is a 400 problem', async () => {
    expectProblem(await rawRequest(port, 'BREW /health HTTP/1.1\r\nHost: localhost\r\n\r\n'), 400, 'bad_request');
  });

  it('an unknown route and a known path with the wrong method are 404 problems', async () => {
    expectProblem(await rawRequest(port, get('/nothing/here')), 404, 'not_found');
    expectProblem(await rawRequest(port, 'PROPFIND /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'), 404, 'not_found');
    expectProblem(await rawRequest(port, 'DELETE /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'), 404, 'not_found');
  });

  it('a body declared larger than the limit is a 413 problem', async () => {
    const answer = await rawRequest(
      port,
      'POST /api/v1/evaluation HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\n{',
    );
    expectProblem(answer, 413, 'payload_too_large');
  });

  it('the server keeps serving after each of them', async () => {
    const answer = await rawRequest(port, get('/health'));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 'healthy' });
  });
});
