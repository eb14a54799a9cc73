/**
 * Signals in how a text is written rather than what it says: invisible characters, links
 * that carry data out, instructions hidden in an encoding. PURE, linear: each looks at
 * every character a bounded number of times, and decoding is capped (DECODE_MAX).
 */

/** What invisibleIn found: tag characters (not in a flag emoji), bidi controls, zero-width characters inside words. */
export interface Invisible {
  tags: number;
  bidi: number;
  zeroWidth: number;
}

/**
 * Counts the characters that hide text from a reader. Unicode tag characters
 * (U+E0000..E007F) spell ASCII invisibly; only a subdivision flag (🏴 then tags) uses them
 * legitimately. Bidi overrides and isolates reorder what is shown. Zero-width characters
 * are counted only between two letters (emoji and some scripts join with them elsewhere).
 */
export function invisibleIn(text: string): Invisible {
  const out: Invisible = { tags: 0, bidi: 0, zeroWidth: 0 };
  let inFlag = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0xdb40) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdc7f) {
        if (!inFlag) out.tags++;
        // U+E007F CANCEL TAG ends a flag sequence.
        if (low === 0xdc7f) inFlag = false;
        i++;
        continue;
      }
    }
    if (c === 0xd83c && text.charCodeAt(i + 1) === 0xdff4) {
      inFlag = true;
      i++;
      continue;
    }
    inFlag = false;
    if ((c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)) out.bidi++;
    else if ((c === 0x200b || c === 0x2060 || c === 0xfeff || c === 0x180e) && i > 0 && isLetter(text.charCodeAt(i - 1)) && isLetter(text.charCodeAt(i + 1))) out.zeroWidth++;
  }
  return out;
}

const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);

/** Characters of a link's URL read at most. */
const URL_MAX = 4096;

/**
 * A markdown image (`![alt](https://host/path?q=…)`) or an HTML `<img src>` whose URL
 * carries data: a query with a value, a template placeholder, or a long path segment.
 * Rendering the image sends the request, with no click: the classic way an injected
 * prompt has the model leak the conversation. Plain links are not reported.
 */
export function exfiltrationLinkIn(plain: string): boolean {
  // Each search's answer serves the openers before it: searched again from every opener,
  // 100,000 openers and one `](` at the end were read 100,000 times.
  let urls = new LinkUrls(plain);
  let close = -1;
  for (let at = plain.indexOf('!['); at >= 0; at = plain.indexOf('![', at + 2)) {
    if (close < at + 2) close = plain.indexOf('](', at + 2);
    if (close < 0) break;
    if (close - at > 512) continue;
    if (urls.carriesData(close + 2)) return true;
  }
  urls = new LinkUrls(plain);
  let src = -1;
  for (let at = plain.indexOf('<img'); at >= 0; at = plain.indexOf('<img', at + 4)) {
    if (src < at + 4) src = plain.indexOf('src', at + 4);
    if (src < 0) break;
    if (src - at > 512) continue;
    let i = src + 3;
    while (i < plain.length && (plain[i] === ' ' || plain[i] === '=' || plain[i] === '"' || plain[i] === "'")) i++;
    if (urls.carriesData(i)) return true;
  }
  return false;
}

/**
 * The URLs of one kind of link in a text, asked in the order they start. Each character is
 * read a bounded number of times, however the links overlap: text of link openers with no
 * space between them (`![a](![a](…`) made each opener read its URL up to URL_MAX
 * characters again, 2.7 s for 200 KB. Where a URL ends is kept for the URLs starting
 * before that end (the same end, as nothing between ends one). Such a URL is a part of the
 * one read before it, whose data was checked: a part of a URL holds no query, placeholder
 * or long segment that the whole does not, so it is not read again.
 */
class LinkUrls {
  /** The end of the URL read last, and of every URL starting before it. */
  #end = -1;

  constructor(private readonly text: string) {}

  carriesData(from: number): boolean {
    const text = this.text;
    let start = from;
    while (text[start] === ' ' || text[start] === '<') start++;
    if (!SCHEME_RE.test(text.slice(start, start + 8))) return false;
    if (start < this.#end) return false;
    const limit = Math.min(text.length, start + URL_MAX);
    let end = start;
    while (end < limit && !isUrlEnd(text.charCodeAt(end))) end++;
    this.#end = end;
    // No end within URL_MAX characters: a URL that long has room for any message.
    if (end === start + URL_MAX) return true;
    return carriesData(text.slice(start, end));
  }
}

const SCHEME_RE = /^(?:https?:)?\/\//;

/** Whitespace, `)`, a quote or `>`: where a link's URL ends. */
function isUrlEnd(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0x29 || c === 0x22 || c === 0x27 || c === 0x3e || c === 0xa0 || c === 0x2028 || c === 0x2029 || c === 0x3000 || (c >= 0x2000 && c <= 0x200a) || c === 0x1680 || c === 0x202f || c === 0x205f || c === 0xfeff;
}

function carriesData(url: string): boolean {
  if (/[?&][^=&#]+=[^&#]/.test(url)) return true;
  if (/[{$]|%7b|\[[a-z_]+\]/.test(url)) return true;
  // A path segment of 32+ characters is room for an encoded message.
  return url.split(/[/?#]/).some((segment) => segment.length >= 32);
}

/** Bytes decoded per text at most, over all encodings: decoding stays bounded. */
const DECODE_MAX = 65_536;
/** A base64 run shorter than this holds too few words to carry an instruction. */
const BASE64_MIN = 24;
const HEX_MIN = 32;

/**
 * The texts hidden in `text`'s encodings: base64 (and base64url) runs, hex runs and
 * URL-encoded (percent or HTML entity) text, decoded once. A decoded part that is not
 * mostly printable text is left out. `bytes` is the text's UTF-8 encoding, when the caller has it.
 */
export function decodedParts(text: string, bytes: Buffer = Buffer.from(text, 'utf8')): string[] {
  const parts: string[] = [];
  let budget = DECODE_MAX;
  const keep = (decoded: string) => {
    if (decoded.length > 0 && printable(decoded)) parts.push(decoded);
  };
  // The runs are found in the text's UTF-8 bytes: every character of a run is ASCII, one
  // byte, and any other character is bytes >= 128, which no run or pair holds. A typed array
  // and a table against charCodeAt, range tests and a pairs regex: -12% CPU per 2 KB check.
  // One pass over runs of base64 characters; a run long enough is decoded as hex when it
  // is all hex digits (32+), else as base64.
  const n = bytes.length;
  let i = 0;
  while (i < n && budget > 0) {
    while (i < n && (CHAR_CLASS[bytes[i]!]! & B64) === 0) i++;
    const start = i;
    let all = B64 | HEX;
    for (let k: number; i < n && ((k = CHAR_CLASS[bytes[i]!]!) & B64) !== 0; i++) all &= k;
    for (let pad = 0; pad < 2 && i < n && bytes[i] === 61; pad++) i++;
    if (i - start < BASE64_MIN) continue;
    const run = bytes.toString('latin1', start, Math.min(i, start + budget));
    budget -= run.length;
    if ((all & HEX) !== 0) {
      if (run.length >= HEX_MIN) keep(Buffer.from(run.slice(0, run.length - (run.length % 2)), 'hex').toString('utf8'));
      continue;
    }
    keep(Buffer.from(run, run.includes('-') || run.includes('_') ? 'base64url' : 'base64').toString('utf8'));
  }
  forEachHexPairRun(bytes, (pairs) => {
    if (budget <= 0) return false;
    const hex = pairs.replace(/[ :]/g, '').slice(0, budget);
    budget -= hex.length;
    if (hex.length >= HEX_MIN) keep(Buffer.from(hex.slice(0, hex.length - (hex.length % 2)), 'hex').toString('utf8'));
    return true;
  });
  if (budget > 0 && /%[0-9a-fA-F]{2}|&#x?[0-9a-fA-F]+;/.test(text)) {
    keep(unescapeText(text.slice(0, budget)));
  }
  return parts;
}

const B64 = 1;
const HEX = 2;
const PAIR_SEPARATOR = 4;
/** Per byte: B64 (letters, digits, `+/-_`), HEX (hex digits), PAIR_SEPARATOR (space, colon); 0 from 128 on. */
const CHAR_CLASS = (() => {
  const table = new Uint8Array(256);
  for (let c = 0; c < 128; c++) {
    const ch = String.fromCharCode(c);
    if (/[A-Za-z0-9+/_-]/.test(ch)) table[c]! |= B64;
    if (/[0-9a-fA-F]/.test(ch)) table[c]! |= HEX;
    if (ch === ' ' || ch === ':') table[c]! |= PAIR_SEPARATOR;
  }
  return table;
})();

/**
 * Hex written in pairs with a space or colon between them (`41 42 43`, `41:42:43`), 16
 * pairs or more: what `/(?:[0-9a-fA-F]{2}[ :]){15,}[0-9a-fA-F]{2}/g` finds in the text,
 * left to right, in one pass over its bytes (a failed run resumes where it failed: no match
 * starts inside it). `each` gets the run as written; false stops. Table lookups inline
 * rather than through closures: -16% CPU per 2 KB check.
 */
function forEachHexPairRun(bytes: Buffer, each: (pairs: string) => boolean): void {
  const n = bytes.length;
  let s = 0;
  while (s + 1 < n) {
    // Most bytes start no pair: one table lookup moves past them.
    if ((CHAR_CLASS[bytes[s]!]! & HEX) === 0) {
      s++;
      continue;
    }
    let i = s;
    let pairs = 0;
    while (i + 2 < n && (CHAR_CLASS[bytes[i]!]! & CHAR_CLASS[bytes[i + 1]!]! & HEX) !== 0 && (CHAR_CLASS[bytes[i + 2]!]! & PAIR_SEPARATOR) !== 0) {
      pairs++;
      i += 3;
    }
    const pairAt = i + 1 < n && (CHAR_CLASS[bytes[i]!]! & CHAR_CLASS[bytes[i + 1]!]! & HEX) !== 0;
    let end = -1;
    if (pairs >= 15 && pairAt) end = i + 2;
    else if (pairs >= 16) end = i - 1;
    if (end >= 0) {
      if (!each(bytes.toString('latin1', s, end))) return;
      s = end;
    } else s = pairs === 0 ? s + 1 : i;
  }
}

/** Percent-encoding and numeric HTML entities decoded; what does not decode stays as it is. */
function unescapeText(text: string): string {
  const entities = text.replace(/&#(x[0-9a-f]+|\d+);/gi, (whole, code: string) => {
    const n = code[0] === 'x' || code[0] === 'X' ? parseInt(code.slice(1), 16) : parseInt(code, 10);
    return n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : whole;
  });
  return entities.replace(/(?:%[0-9a-fA-F]{2})+/g, (run) => {
    try {
      return decodeURIComponent(run);
    } catch {
      return run;
    }
  });
}

/** Mostly printable text: at least 85 % of the characters are not control or replacement characters. */
function printable(s: string): boolean {
  let bad = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if ((c < 32 && c !== 9 && c !== 10 && c !== 13) || c === 0xfffd) bad++;
  }
  return bad <= s.length * 0.15;
}
