/**
 * The eighth attack pass on the MCP gateway (issue #39), second reader of the seventh: the
 * relay between a raw JSON-RPC client and a scripted server, as in the seventh.
 *
 * What held (no change): a charset TextDecoder does not know or maps to its replacement
 * encoding (`iso-2022-kr`): no declared text, the sniffed ones still checked; a 30 MB
 * binary blob naming five charsets (two decodes, 0.28 s); a send-timeout timer per
 * response (1,000 calls on one session: one live timer before and two after); a connection
 * cut by the send timeout is destroyed, so no second request reuses it; a deny entry that
 * folds to '' hides only tools whose names fold to '' too.
 */
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { toolPermitted } from '../../src/model/mcp-server.js';
import { CARD, denyCardOutput, sdkControl } from './guarded-agent.js';
import { startTestGateway } from './mcp-http-gateway.js';
import { answeringRelay, blobResource } from './scripted-relay.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const records = [sdkControl(1, 'deny-card-numbers', denyCardOutput)];

const answering = (answers: Record<string, Record<string, unknown>>) => answeringRelay('eighth-pass', answers, records, closers);
const resource = blobResource;

/** `text` in UTF-32 (no byte-order mark), as Python's `str.encode('utf-32-le')` writes it. */
function utf32(text: string, order: 'le' | 'be'): Buffer {
  const out = Buffer.alloc([...text].length * 4);
  [...text].forEach((char, i) => (order === 'le' ? out.writeUInt32LE(char.codePointAt(0)!, i * 4) : out.writeUInt32BE(char.codePointAt(0)!, i * 4)));
  return out;
}

describe('text in an encoding the platform decoder does not know', () => {
  const LIST = `name,card\nAnn,${CARD}\n`;

  it('UTF-32 text, declared or not, is checked as its text', async () => {
    const le = utf32(LIST, 'le').toString('base64');
    const be = utf32(LIST, 'be').toString('base64');
    const { call } = await answering({
      declared: resource(le, 'text/csv; charset=utf-32'),
      declaredBe: resource(be, 'text/csv; charset=UTF-32BE'),
      untyped: resource(le),
      untypedBe: resource(be, 'application/octet-stream'),
    });
    expect(await call(1, 'declared')).not.toContain(le);
    expect(await call(2, 'declaredBe')).not.toContain(be);
    expect(await call(3, 'untyped')).not.toContain(le);
    expect(await call(4, 'untypedBe')).not.toContain(be);
  });

  it('UTF-7 text with its digits base64-shifted is checked as the text a UTF-7 reader shows', async () => {
    // Python: 'card 4111111111111111'.encode('utf-7') keeps digits direct; a server shifts them itself.
    const shifted = `card +${Buffer.from(CARD, 'utf16le').swap16().toString('base64').replace(/=+$/, '')}-\n`;
    const blob = Buffer.from(shifted).toString('base64');
    const { call } = await answering({ utf7: resource(blob, 'text/plain; charset=utf-7') });
    expect(await call(1, 'utf7')).not.toContain(blob);
  });

  it('a charset named twice is read by each name: one parser takes the first, another the last', async () => {
    // UTF-7 is read only when named: the card number shows under the name taken, whichever it is.
    const blob = Buffer.from(`card +${Buffer.from(CARD, 'utf16le').swap16().toString('base64').replace(/=+$/, '')}-\n`).toString('base64');
    const { call } = await answering({
      last: resource(blob, 'text/plain; charset=iso-8859-1; charset=utf-7'),
      first: resource(blob, "text/plain; charset='utf-7'; charset=iso-8859-1"),
    });
    expect(await call(1, 'last')).not.toContain(blob);
    expect(await call(2, 'first')).not.toContain(blob);
  });
});

describe('UTF-16 with a NUL byte on the other side of a pair', () => {
  it('UTF-16 text holding a character whose low byte is NUL (一, U+4E00) or U+0000 is still checked as UTF-16', async () => {
    // .NET's Encoding.Unicode: no byte-order mark; 一 is 00 4E in little-endian, a NUL on the even side beside the ASCII's odd ones.
    const cjk = Buffer.from(`第一,${CARD}\n`, 'utf16le').toString('base64');
    const nul = Buffer.from(`name,card\nAnn,${CARD}\n\u0000`, 'utf16le').toString('base64');
    const { call } = await answering({ cjk: resource(cjk, 'application/octet-stream'), nul: resource(nul) });
    expect(await call(1, 'cjk')).not.toContain(cjk);
    expect(await call(2, 'nul')).not.toContain(nul);
  });

  it('UTF-16 text with one stray byte at its end is checked as the UTF-16 a lenient reader shows', async () => {
    const odd = Buffer.concat([Buffer.from(`name,card\nAnn,${CARD}\n`, 'utf16le'), Buffer.from([0x0a])]).toString('base64');
    const { call } = await answering({ odd: resource(odd, 'application/octet-stream') });
    expect(await call(1, 'odd')).not.toContain(odd);
  });
});

describe('deny_tools loose names', () => {
  it('a denied tool renamed with an invisible combining mark or variation selector is hidden', () => {
    const server = { deny_tools: ['write_file'] };
    for (const renamed of ['write\u034F_file', 'write_file\uFE0F', 'write_\u180Bfile', 'write_file\u{E0100}', 'write\u3164_file', 'write_f\u115File']) {
      expect(toolPermitted(server, renamed), JSON.stringify(renamed)).toBe(false);
    }
    expect(toolPermitted(server, 'read_file')).toBe(true);
  });
});

describe('the send timeout (HTTP face)', () => {
  const VERSION = '2025-11-25';
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

  async function openSession(url: string): Promise<string> {
    const init = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: 'slow', version: '1' } } }) });
    const sid = init.headers.get('mcp-session-id')!;
    await init.text();
    await (await fetch(url, { method: 'POST', headers: { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': VERSION }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
    return sid;
  }

  /** Reads `big`'s 10 MB answer at `perTick` bytes a tick of 20 ms; the bytes read when the connection ended. */
  async function readSlowly(url: string, sid: string, accept: string, perTick: number): Promise<number> {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.pause();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'big', arguments: {} } });
    socket.write(`POST /mcp HTTP/1.1\r\nHost: ${hostname}:${port}\r\ncontent-type: application/json\r\naccept: ${accept}\r\nmcp-session-id: ${sid}\r\nmcp-protocol-version: ${VERSION}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    let read = 0;
    const tick = setInterval(() => {
      let chunk: Buffer | null;
      let taken = 0;
      while (taken < perTick && (chunk = socket.read() as Buffer | null) !== null) taken += chunk.length;
      read += taken;
    }, 20);
    await new Promise((resolve) => socket.once('close', resolve));
    clearInterval(tick);
    return read;
  }

  it('a client that reads its answer slowly but steadily is not cut: JSON and SSE', { timeout: 60_000 }, async () => {
    const { gw, reports } = await startTestGateway(closers, { agentName: 'eighth-pass', sendTimeoutMs: 1000 });
    const sid = await openSession(gw.url);
    // 64 KB each 20 ms: 3.2 MB/s, 10 MB in about 3 s, three times the send timeout.
    for (const accept of ['application/json, text/event-stream', 'text/event-stream, application/json']) {
      const read = await readSlowly(gw.url, sid, accept, 64 * 1024);
      expect(read, accept).toBeGreaterThan(10_000_000);
    }
    expect(reports.filter((l) => l.includes('read nothing of its response'))).toEqual([]);
  });
});
