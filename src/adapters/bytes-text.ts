/**
 * The text a reader may take from bytes sent base64-encoded: an MCP server's blob
 * (mcp-blob-text.ts), a file a tool hands the model (model-output-files.ts). A client
 * decodes them by the charset the mime type names, a person's editor or a model provider by
 * what the bytes look like. A text file is UTF-8 only by habit: Excel on Windows saves a CSV in
 * Windows-1252 (one accented name makes it no UTF-8), .NET's Encoding.Unicode writes UTF-16
 * without a byte-order mark, a Japanese system Shift_JIS. Each text found is checked.
 */

import { TextDecoder } from 'node:util';

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
  // Not fatal: a client reading by the charset shows what it can of bytes that break it, ASCII included.
  const declared = declaredDecoder(mimeType);
  if (declared !== null) texts.add(declared.decode(bytes));
  return texts.size === 0 ? null : [...texts].join('\n');
}

/** The decoder of the charset a mime type names (`text/csv; charset="ISO-8859-1"`); null when it names none a decoder knows. */
function declaredDecoder(mimeType: unknown): TextDecoder | null {
  if (typeof mimeType !== 'string') return null;
  const label = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(mimeType)?.[1];
  if (label === undefined) return null;
  try {
    return new TextDecoder(label);
  } catch {
    return null;
  }
}

/**
 * Bytes as an editor sniffs them, each way that fits: UTF-16 after its byte-order mark, or
 * without one when every NUL byte sits on one side of the pairs (as the high byte of ASCII
 * does: odd offsets in little-endian); UTF-8; Windows-1252 (no control byte but white
 * space). Bytes of one can be another's too (`A\0` and ASCII are UTF-8; a byte-order mark
 * before ASCII is Windows-1252, and a lenient UTF-8 reader shows the ASCII), and a client
 * may read them as either. None for the rest (an image, a PDF, compressed data: control bytes
 * and NULs anywhere).
 */
function textsByShape(bytes: Uint8Array): string[] {
  const texts: string[] = [];
  const order = bytes[0] === 0xff && bytes[1] === 0xfe ? 'le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'be' : utf16Order(bytes);
  if (order !== null) texts.push(utf16[order].decode(bytes));
  try {
    texts.push(utf8.decode(bytes));
  } catch {
    if (isSingleByteText(bytes)) texts.push(windows1252.decode(bytes));
  }
  return texts;
}

/** `le` or `be` when the bytes are pairs with every NUL on the same side and some there; null otherwise. */
function utf16Order(bytes: Uint8Array): 'le' | 'be' | null {
  if (bytes.length < 2 || bytes.length % 2 !== 0) return null;
  let even = 0;
  let odd = 0;
  for (let i = 0; i < bytes.length; i += 2) {
    if (bytes[i] === 0) even++;
    if (bytes[i + 1] === 0) odd++;
  }
  if (odd > 0 && even === 0) return 'le';
  if (even > 0 && odd === 0) return 'be';
  return null;
}

/** No C0 control byte but tab, line feed, vertical tab, form feed, carriage return and escape, and no DEL: text in a single-byte charset. */
function isSingleByteText(bytes: Uint8Array): boolean {
  for (const byte of bytes) {
    if ((byte < 0x20 && (byte < 0x09 || byte > 0x0d) && byte !== 0x1b) || byte === 0x7f) return false;
  }
  return true;
}
