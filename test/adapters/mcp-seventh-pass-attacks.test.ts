/**
 * The seventh attack pass on the MCP gateway (issue #39): the relay between a raw JSON-RPC
 * client and a scripted server over the MCP SDK's in-memory transports, as in the sixth.
 *
 * What held (no change): a blob in the base64url alphabet, with line breaks or spaces
 * inside, or without its padding (Node decodes each as the client's decoders do); a blob in
 * structuredContent, in _meta, in a resource link's annotations, in an embedded resource
 * nested in another, in a sampling request of the server's.
 */
import type { ControlDataInput } from '../../src/model/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { sdkControl } from './guarded-agent.js';
import { scriptedRelay } from './scripted-relay.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const CARD = '4111 1111 1111 1111';
/** No card number in what a resource read or a tool answers, in the gateway's process. */
const denyCards: ControlDataInput = {
  execution: 'sdk',
  scope: { step_types: ['resource', 'tool'], stages: ['post'] },
  selector: { path: 'output' },
  evaluator: { name: 'pii', config: { kinds: ['credit_card'] } },
  action: { decision: 'deny', message: 'No card numbers.' },
};
const records = [sdkControl(1, 'deny-card-numbers', denyCards)];

/** A relay whose server answers each tool named in `answers` with its result. */
async function answering(answers: Record<string, Record<string, unknown>>) {
  const relay = await scriptedRelay('seventh-pass', (request, reply) => {
    const name = (request.params as { name?: string }).name ?? '';
    reply({ jsonrpc: '2.0', id: request.id, result: answers[name] ?? {} });
  }, records, { tools: Object.keys(answers).map((name) => ({ name, inputSchema: { type: 'object' } })) });
  closers.push(relay.close);
  return relay;
}

const resource = (blob: string, mimeType?: string) => ({ content: [{ type: 'resource', resource: { uri: 'file:///customers.csv', ...(mimeType !== undefined && { mimeType }), blob } }] });

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

  it('binary bytes stay as they are: an image whose pixels hold digits a card number\'s shape passes', async () => {
    // A PNG's signature and header chunk (control bytes, NULs at both parities), then the digits.
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x01, 0x00]), Buffer.from(CARD)]).toString('base64');
    const { call } = await answering({ image: { content: [{ type: 'image', mimeType: 'image/png', data: png }] } });
    expect(await call(1, 'image')).toContain(png);
  });
});
