/**
 * The seventh attack pass on the MCP gateway (issue #39): the relay between a raw JSON-RPC
 * client and a scripted server over the MCP SDK's in-memory transports, as in the sixth.
 *
 * What held (no change): a blob in the base64url alphabet, with line breaks or spaces
 * inside, or without its padding (Node decodes each as the client's decoders do); a blob in
 * structuredContent, in _meta, in a resource link's annotations; a 30 MB blob (93 ms, one
 * copy of its text); a client that half-closes its connection after a call (taken as gone,
 * its answer held within the session's bound, the session serves on). Not decoded, as
 * docs/security.md says: a blob in the decoded JSON of another (base64 twice), compressed text.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CARD, denyCardOutput, sdkControl } from './guarded-agent.js';
import { startTestGateway } from './mcp-http-gateway.js';
import { answeringRelay, blobResource } from './scripted-relay.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const records = [sdkControl(1, 'deny-card-numbers', denyCardOutput)];

const answering = (answers: Record<string, Record<string, unknown>>) => answeringRelay('seventh-pass', answers, records, closers);
const resource = blobResource;

describe('text a server sends base64-encoded in another encoding than UTF-8', () => {
  /** A customer list as Excel on Windows saves it (Windows-1252): one accented name makes it no UTF-8. */
  const LATIN1 = Buffer.from(`name,card\nRené Dupont,${CARD}\n`, 'latin1').toString('base64');
  /** The same list as .NET's Encoding.Unicode writes it: UTF-16, little-endian, no byte-order mark. */
  const UTF16_ASCII = Buffer.from(`name,card\nAnn,${CARD}\n`, 'utf16le').toString('base64');
  const UTF16_ACCENTED = Buffer.from(`name,card\nRené,${CARD}\n`, 'utf16le').toString('base64');

  it('a Windows-1252 text file (an accented name in it) sent as a blob is checked as its text: its card number is refused', async () => {
    const { call } = await answering({ octets: resource(LATIN1, 'application/octet-stream'), untyped: resource(LATIN1) });
    expect(await call(1, 'octets')).not.toContain(LATIN1);
    expect(await call(2, 'untyped')).not.toContain(LATIN1);
  });

  it('a blob whose mime type names its charset is checked as the text the client reads by it', async () => {
    // `顧客: ` (customer) in Shift_JIS, whose second bytes are no UTF-8, then the card number.
    const SHIFT_JIS = Buffer.concat([Buffer.from([0x8c, 0xda, 0x8b, 0x71, 0x3a, 0x20]), Buffer.from(CARD)]).toString('base64');
    const { call } = await answering({
      latin1: resource(LATIN1, 'text/csv; charset=ISO-8859-1'),
      utf16: resource(UTF16_ACCENTED, 'text/csv; charset="utf-16le"'),
      sjis: resource(SHIFT_JIS, 'text/plain;charset=Shift_JIS'),
    });
    expect(await call(1, 'latin1')).not.toContain(LATIN1);
    expect(await call(2, 'utf16')).not.toContain(UTF16_ACCENTED);
    expect(await call(3, 'sjis')).not.toContain(SHIFT_JIS);
  });

  it('UTF-16 text without a byte-order mark is checked as its text, ASCII or not', async () => {
    const { call } = await answering({ ascii: resource(UTF16_ASCII, 'application/octet-stream'), accented: resource(UTF16_ACCENTED) });
    expect(await call(1, 'ascii')).not.toContain(UTF16_ASCII);
    expect(await call(2, 'accented')).not.toContain(UTF16_ACCENTED);
  });

  it('ASCII text after a UTF-16 byte-order mark is checked as the ASCII a lenient reader shows, not only as the UTF-16 it is not', async () => {
    const marked = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`card ${CARD}`)]).toString('base64');
    const { call } = await answering({ marked: resource(marked, 'application/octet-stream') });
    expect(await call(1, 'marked')).not.toContain(marked);
  });

});

describe('a client that reads nothing of its answer but keeps sending (HTTP face)', () => {
  const VERSION = '2025-11-25';

  /** A session opened over plain HTTP; its id. */
  async function openSession(url: string): Promise<string> {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'attacker', version: '1' } } }) });
    const sid = init.headers.get('mcp-session-id')!;
    await init.text();
    await (await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': VERSION }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
    return sid;
  }

  /** A raw connection that asks `big` for its 10 MB answer (JSON or SSE, as `accept` prefers) and never reads it. */
  async function stalledCall(url: string, sid: string, id: number, accept: string): Promise<Socket> {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    // Its connection is cut as it writes: that is what is tested, not an error of the test's.
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.pause();
    const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'big', arguments: {} } });
    socket.write(`POST /mcp HTTP/1.1\r\nHost: ${hostname}:${port}\r\ncontent-type: application/json\r\naccept: ${accept}\r\nmcp-session-id: ${sid}\r\nmcp-protocol-version: ${VERSION}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    return socket;
  }

  it('a line break sent every few tenths of the send timeout does not keep its connection, nor the unread answer the gateway holds for it: JSON and SSE', { timeout: 60_000 }, async () => {
    const { gw, reports } = await startTestGateway(closers, { agentName: 'seventh-pass', sendTimeoutMs: 1000 });
    const sid = await openSession(gw.url);
    const sockets = await Promise.all(['application/json, text/event-stream', 'text/event-stream, application/json'].map((accept, i) => stalledCall(gw.url, sid, i + 1, accept)));
    // An empty line before a request is no request (RFC 9112 2.2): it starts no header timeout, and it is bytes the socket reads.
    const trickle = setInterval(() => {
      for (const socket of sockets) if (!socket.destroyed) socket.write('\r\n');
    }, 300);
    try {
      await expect.poll(() => reports.filter((l) => l.includes('read nothing of its response')).length, { timeout: 30_000 }).toBe(2);
    } finally {
      clearInterval(trickle);
      for (const socket of sockets) socket.destroy();
    }
  });
});
