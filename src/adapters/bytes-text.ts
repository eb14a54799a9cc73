/**
 * The text a reader may take from bytes sent base64-encoded: an MCP server's blob
 * (mcp-blob-text.ts), a file a tool hands the model (model-output-files.ts). A client
 * decodes them by the charset the mime type names, a person's editor or a model provider by
 * what the bytes look like. A text file is UTF-8 only by habit: Excel on Windows saves a CSV in
 * Windows-1252 (one accented name makes it no UTF-8), .NET's Encoding.Unicode writes UTF-16
 * without a byte-order mark, a Japanese system Shift_JIS. Each text found is checked.
 */

import { TextDecoder } from 'node:util';
import { orderOfUtf32, wideDecoder } from './wide-text.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** Total on any bytes, and ASCII as ASCII: every secret and card number written in ASCII is seen as it is. */
const windows1252 = new TextDecoder('windows-1252');
const utf16 = { le: new TextDecoder('utf-16le'), be: new TextDecoder('utf-16be') };

/**
 * The texts of `bytes`, one a line: as the charset of `mimeType` reads them, when it names
 * one, and as they look (textsByShape); null for bytes that are no text and declare no charset.
 */
export function textOfBytes(bytes: Uint8Array, mimeType: unknown): string | null {
  const texts = new Set<string>(textsByShape(bytes));
  for (const decode of declaredDecoders(mimeType)) texts.add(decode(bytes));
  return texts.size === 0 ? null : [...texts].join('\n');
}

/** At most this many charsets a mime type names are read, the first and the last: what parsers take (each decode of a 30 MB blob costs up to 0.2 s). */
const MAX_DECLARED = 2;

/**
 * The decoders of the charsets a mime type names (`text/csv; charset="ISO-8859-1"`), each
 * one when it names several (one parser takes the first, another the last); none for names
 * no decoder here knows.
 */
function declaredDecoders(mimeType: unknown): Array<(bytes: Uint8Array) => string> {
  if (typeof mimeType !== 'string') return [];
  const labels = [...mimeType.matchAll(/;\s*charset\s*=\s*["']?([^"';\s]+)/gi)].map((match) => match[1]!);
  const chosen = labels.length > MAX_DECLARED ? [...labels.slice(0, MAX_DECLARED / 2), ...labels.slice(-MAX_DECLARED / 2)] : labels;
  const decoders = new Map<string, (bytes: Uint8Array) => string>();
  for (const label of chosen) {
    const decode = decoderOf(label);
    if (decode !== null) decoders.set(label.toLowerCase(), decode);
  }
  return [...decoders.values()];
}

function decoderOf(label: string): ((bytes: Uint8Array) => string) | null {
  const wide = wideDecoder(label);
  if (wide !== null) return wide;
  try {
    // Not fatal: a client reading by the charset shows what it can of bytes that break it, ASCII included.
    const decoder = new TextDecoder(label);
    return (bytes) => decoder.decode(bytes);
  } catch {
    return null;
  }
}

/**
 * Bytes as an editor sniffs them, each way that fits: UTF-16 after its byte-order mark, or
 * without one when the NUL bytes sit on one side of the pairs, as the high byte of ASCII
 * does (odd offsets in little-endian), bar 1 in 8; UTF-32 by its shape; UTF-8; Windows-1252 (no control byte but white
 * space). Bytes of one can be another's too (`A\0` and ASCII are UTF-8; a byte-order mark
 * before ASCII is Windows-1252, and a lenient UTF-8 reader shows the ASCII), and a client
 * may read them as either. None for the rest (an image, a PDF, compressed data: control bytes
 * and NULs anywhere).
 */
function textsByShape(bytes: Uint8Array): string[] {
  const texts: string[] = [];
  const order = bytes[0] === 0xff && bytes[1] === 0xfe ? 'le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'be' : utf16Order(bytes);
  if (order !== null) texts.push(utf16[order].decode(bytes));
  const wide = orderOfUtf32(bytes);
  if (wide !== null) texts.push(wideDecoder(`utf-32${wide}`)!(bytes));
  try {
    texts.push(utf8.decode(bytes));
  } catch {
    if (isSingleByteText(bytes)) texts.push(windows1252.decode(bytes));
  }
  return texts;
}

/**
 * `le` or `be` when the bytes are pairs (but for a last one) with their NULs on one side, some there: at most one
 * in 8 on the other (a character whose low byte is NUL, 一 U+4E00 among them, or U+0000
 * itself, puts one there in text that is UTF-16 all the same); null otherwise.
 */
function utf16Order(bytes: Uint8Array): 'le' | 'be' | null {
  if (bytes.length < 2) return null;
  let even = 0;
  let odd = 0;
  // A stray last byte is left out, as a lenient UTF-16 reader shows all before it (and U+FFFD for it).
  for (let i = 0; i + 1 < bytes.length; i += 2) {
    if (bytes[i] === 0) even++;
    if (bytes[i + 1] === 0) odd++;
  }
  if (odd > 0 && even * 8 <= odd) return 'le';
  if (even > 0 && odd * 8 <= even) return 'be';
  return null;
}

/** No C0 control byte but tab, line feed, vertical tab, form feed, carriage return and escape, and no DEL: text in a single-byte charset. */
function isSingleByteText(bytes: Uint8Array): boolean {
  for (const byte of bytes) {
    if ((byte < 0x20 && (byte < 0x09 || byte > 0x0d) && byte !== 0x1b) || byte === 0x7f) return false;
  }
  return true;
}
