/**
 * Decoders for the charsets a client's platform knows and Node's TextDecoder (the WHATWG
 * Encoding Standard) does not: UTF-32 and UTF-7. Python's codecs read both (`utf-32`,
 * `utf-7`), so a client written in Python shows text in them that TextDecoder never sees.
 */

import { TextDecoder } from 'node:util';

/** The decoder of `label` when it names UTF-32 or UTF-7; null for any other label. */
export function wideDecoder(label: string): ((bytes: Uint8Array) => string) | null {
  const name = label.toLowerCase().replace(/[-_\s]/g, '');
  if (name === 'utf32' || name === 'ucs4' || name === 'utf32le') return (bytes) => utf32(bytes, name === 'utf32le' ? 'le' : orderOfUtf32(bytes) ?? 'le');
  if (name === 'utf32be') return (bytes) => utf32(bytes, 'be');
  if (name === 'utf7' || name === 'unicode11utf7' || name === 'csunicode11utf7') return utf7;
  return null;
}

/**
 * `le` or `be` when the bytes are whole 4-byte units that are each a code point in that
 * order, NUL bytes among them (ASCII's high bytes): UTF-32 as a sniffing reader takes it.
 */
export function orderOfUtf32(bytes: Uint8Array): 'le' | 'be' | null {
  if (bytes.length < 4 || bytes.length % 4 !== 0) return null;
  if (bytes[0] === 0xff && bytes[1] === 0xfe && bytes[2] === 0 && bytes[3] === 0) return 'le';
  if (bytes[0] === 0 && bytes[1] === 0 && bytes[2] === 0xfe && bytes[3] === 0xff) return 'be';
  if (fitsUtf32(bytes, 'le')) return 'le';
  if (fitsUtf32(bytes, 'be')) return 'be';
  return null;
}

function fitsUtf32(bytes: Uint8Array, order: 'le' | 'be'): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < bytes.length; i += 4) {
    const point = view.getUint32(i, order === 'le');
    if (point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) return false;
  }
  return true;
}

/** UTF-32 as a lenient reader shows it: U+FFFD for a unit that is no code point or a tail of less than four bytes. */
function utf32(bytes: Uint8Array, order: 'le' | 'be'): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Written as UTF-16 code units and decoded at once: String.fromCodePoint per point is 4 times slower on 30 MB.
  const units = new Uint16Array(Math.ceil(bytes.length / 4) * 2);
  let n = 0;
  for (let i = 0; i + 4 <= bytes.length; i += 4) {
    let point = view.getUint32(i, order === 'le');
    if (point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) point = 0xfffd;
    if (point > 0xffff) {
      units[n++] = 0xd800 + ((point - 0x10000) >> 10);
      units[n++] = 0xdc00 + ((point - 0x10000) & 0x3ff);
    } else {
      units[n++] = point;
    }
  }
  if (bytes.length % 4 !== 0) units[n++] = 0xfffd;
  return utf16le.decode(units.subarray(0, n));
}

const utf16le = new TextDecoder('utf-16le');

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_VALUE = new Map([...BASE64].map((char, value) => [char.charCodeAt(0), value]));

/**
 * UTF-7 (RFC 2152): bytes as themselves, but `+` opens base64 of UTF-16 code units that the
 * first byte outside base64 closes (a `-` closing it is dropped; `+-` is a plus sign).
 */
function utf7(bytes: Uint8Array): string {
  const units: number[] = [];
  const parts: string[] = [];
  const flush = (): void => {
    parts.push(String.fromCharCode(...units));
    units.length = 0;
  };
  let i = 0;
  while (i < bytes.length) {
    const byte = bytes[i]!;
    i++;
    if (byte !== 0x2b) {
      units.push(byte);
    } else if (bytes[i] === 0x2d) {
      units.push(0x2b);
      i++;
    } else {
      let bits = 0;
      let count = 0;
      while (i < bytes.length && BASE64_VALUE.has(bytes[i]!)) {
        bits = ((bits << 6) | BASE64_VALUE.get(bytes[i]!)!) & 0xffffff;
        count += 6;
        if (count >= 16) {
          count -= 16;
          units.push((bits >> count) & 0xffff);
        }
        i++;
      }
      if (bytes[i] === 0x2d) i++;
    }
    if (units.length >= 8192) flush();
  }
  flush();
  return parts.join('');
}
