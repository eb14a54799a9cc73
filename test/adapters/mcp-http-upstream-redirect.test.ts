/**
 * Redirects the gateway's HTTP upstream (mcp-http-upstream.ts, mcp-http-request.ts) meets,
 * from plain HTTP servers: followed within the origin only (a relative Location included),
 * at most 5, a POST only by 307 and 308 (method and body kept), the server's own stream
 * (GET) by 303 too; the credential headers never sent to another origin, scheme or host
 * name, nor to a target naming userinfo; the target told without its query or userinfo.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LATEST_PROTOCOL_VERSION, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpUpstreamTransport } from '../../src/adapters/mcp-http-upstream.js';

const SECRET = 'Bearer upstream-secret-0123456789';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close().catch(() => undefined);
});

interface Seen {
  method: string;
  path: string;
  authorization: string | undefined;
  session: string | undefined;
  body: string;
}

/** A plain HTTP server on a free port: every request is recorded, then answered by `route`. */
async function server(route: (seen: Seen, res: ServerResponse) => void): Promise<{ url: URL; seen: Seen[] }> {
  const seen: Seen[] = [];
  const http = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const header = (name: string) => (typeof req.headers[name] === 'string' ? req.headers[name] : undefined);
      const record = { method: req.method!, path: req.url!, authorization: header('authorization'), session: header('mcp-session-id'), body: Buffer.concat(chunks).toString('utf8') };
      seen.push(record);
      route(record, res);
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  cleanup.push(async () => {
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });
  return { url: new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`), seen };
}

const initialize: JSONRPCMessage = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } };
const initialized = { jsonrpc: '2.0', id: 0, result: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, serverInfo: { name: 'plain', version: '1' } } };

function answer(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'plain-session' }).end(JSON.stringify(initialized));
}

function redirect(res: ServerResponse, status: number, location: string): void {
  res.writeHead(status, { location }).end();
}

function transportTo(url: URL): { transport: HttpUpstreamTransport; messages: JSONRPCMessage[] } {
  const transport = new HttpUpstreamTransport(url, { headers: { authorization: SECRET } });
  const messages: JSONRPCMessage[] = [];
  transport.onmessage = (m) => messages.push(m);
  transport.onerror = () => undefined;
  cleanup.push(() => transport.close());
  return { transport, messages };
}

describe('redirects of the HTTP upstream', () => {
  it.each([307, 308])('follows a relative %i within the origin, with the method, the body and the credential', async (status) => {
    const origin = await server((seen, res) => (seen.path === '/mcp' ? redirect(res, status, '/moved?x=1') : answer(res)));
    const { transport, messages } = transportTo(origin.url);
    await transport.send(initialize);
    expect(messages).toEqual([initialized]);
    expect(origin.seen).toEqual([
      { method: 'POST', path: '/mcp', authorization: SECRET, session: undefined, body: JSON.stringify(initialize) },
      { method: 'POST', path: '/moved?x=1', authorization: SECRET, session: undefined, body: JSON.stringify(initialize) },
    ]);
  });

  it.each([301, 302, 303])('does not follow a %i for a POST (it would become a GET without the message)', async (status) => {
    const origin = await server((seen, res) => (seen.path === '/mcp' ? redirect(res, status, '/moved') : answer(res)));
    const { transport, messages } = transportTo(origin.url);
    await expect(transport.send(initialize)).rejects.toThrow(`HTTP ${status} Redirect to http://127.0.0.1:${origin.url.port}/moved not followed`);
    expect(messages).toEqual([]);
    expect(origin.seen.map((s) => s.path)).toEqual(['/mcp']);
  });

  it('follows a 303 for the server\'s own stream (GET), with the session and the credential', async () => {
    const origin = await server((seen, res) => {
      if (seen.method === 'POST') return seen.body.includes('"initialize"') ? answer(res) : void res.writeHead(202).end();
      if (seen.path === '/mcp') return redirect(res, 303, '/events');
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`);
    });
    const { transport, messages } = transportTo(origin.url);
    await transport.send(initialize);
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    await expect.poll(() => messages.some((m) => 'method' in m && m.method === 'notifications/tools/list_changed')).toBe(true);
    expect(origin.seen.filter((s) => s.method === 'GET')).toEqual([
      { method: 'GET', path: '/mcp', authorization: SECRET, session: 'plain-session', body: '' },
      { method: 'GET', path: '/events', authorization: SECRET, session: 'plain-session', body: '' },
    ]);
  });

  it('never follows to another origin, scheme or host name, nor to userinfo, and sends them nothing; the error names no query or password', async () => {
    const other = await server((_seen, res) => answer(res));
    const third = await server((_seen, res) => answer(res));
    let location = '';
    const origin = await server((seen, res) => (seen.path === '/mcp' ? redirect(res, 307, location) : answer(res)));
    const targets = [
      `http://127.0.0.1:${other.url.port}/mcp?token=leak-me`,
      `http://localhost:${origin.url.port}/mcp`,
      `https://127.0.0.1:${origin.url.port}/mcp`,
      `//127.0.0.1:${other.url.port}/mcp`,
      `http://127.0.0.1:${third.url.port}/mcp`,
      `http://user:pass-word@127.0.0.1:${origin.url.port}/moved`,
    ];
    for (const target of targets) {
      location = target;
      origin.seen.length = 0;
      const { transport } = transportTo(origin.url);
      const error = await transport.send(initialize).then(() => undefined, (e: unknown) => e as Error);
      expect(error?.message, target).toMatch(/HTTP 307 Redirect to \S+ not followed/);
      expect(error?.message).not.toMatch(/leak-me|pass-word|user/);
      expect(origin.seen.map((s) => s.path), target).toEqual(['/mcp']);
    }
    expect(other.seen).toEqual([]);
    expect(third.seen).toEqual([]);
  });

  it('follows at most 5 redirects: a chain of 5 is answered; a chain of 6 and a loop are refused after 6 requests', async () => {
    for (const [length, answered] of [[5, true], [6, false]] as const) {
      const chain = await server((seen, res) => {
        const step = seen.path === '/mcp' ? 0 : Number(seen.path.slice(2));
        return step < length ? redirect(res, 307, `/r${step + 1}`) : answer(res);
      });
      const { transport, messages } = transportTo(chain.url);
      const sent = transport.send(initialize);
      if (answered) await sent;
      else await expect(sent).rejects.toThrow(`Redirect to http://127.0.0.1:${chain.url.port}/r6 not followed`);
      expect(messages).toHaveLength(answered ? 1 : 0);
      expect(chain.seen.map((s) => s.path)).toEqual(['/mcp', '/r1', '/r2', '/r3', '/r4', '/r5']);
      expect(chain.seen.every((s) => s.authorization === SECRET && s.body === JSON.stringify(initialize))).toBe(true);
    }
    const loop = await server((_seen, res) => redirect(res, 308, '/mcp'));
    const { transport } = transportTo(loop.url);
    await expect(transport.send(initialize)).rejects.toThrow('not followed');
    expect(loop.seen).toHaveLength(6);
  });
});
