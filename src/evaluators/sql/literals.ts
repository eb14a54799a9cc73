/**
 * PURE: whether a SQL text holds a plain string literal ('...', not E'...' nor $tag$...$tag$)
 * with a backslash in it. PostgreSQL reads such a literal two ways: with
 * standard_conforming_strings on (the default) a backslash is an ordinary character, with it
 * off `\'` is an escaped quote. The setting can come from the server's config or an earlier
 * request, which the guard cannot see: `SELECT '\'' ; DROP TABLE t; --'` is one SELECT to the
 * parser and a DROP to a server with the setting off. Up to the first such literal both
 * readings lex the text alike, so a text without one means the same under either setting.
 */

const QUOTE = 0x27;
const DOUBLE_QUOTE = 0x22;
const BACKSLASH = 0x5c;
const DOLLAR = 0x24;
const DASH = 0x2d;
const SLASH = 0x2f;
const STAR = 0x2a;
const AMPERSAND = 0x26;

/** Letters (any non-ASCII character too), digits, `_` and `$`: what an identifier or keyword is made of. */
function isWordChar(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === DOLLAR || c >= 0x80;
}

function isTagStart(c: number): boolean {
  return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || c >= 0x80;
}

/**
 * True when a plain string literal of `text` holds a backslash. Unterminated quotes and
 * comments count as holding one when a backslash follows: the text fails closed either way.
 */
export function hasAmbiguousLiteral(text: string): boolean {
  if (!text.includes('\\')) return false;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === DASH && text.charCodeAt(i + 1) === DASH) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
    } else if (c === SLASH && text.charCodeAt(i + 1) === STAR) {
      // Block comments nest in PostgreSQL.
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (text.charCodeAt(i) === SLASH && text.charCodeAt(i + 1) === STAR) {
          depth++;
          i += 2;
        } else if (text.charCodeAt(i) === STAR && text.charCodeAt(i + 1) === SLASH) {
          depth--;
          i += 2;
        } else i++;
      }
    } else if (c === DOUBLE_QUOTE) {
      const end = text.indexOf('"', i + 1);
      i = end < 0 ? n : end + 1;
    } else if (c === QUOTE) {
      // A quote not taken by a word below: a plain literal ('..', and N'..', B'..', X'..', U&'..').
      const end = plainEnd(text, i);
      if (end < 0) return true;
      i = end;
    } else if (c === DOLLAR && (isTagStart(text.charCodeAt(i + 1)) || text.charCodeAt(i + 1) === DOLLAR)) {
      let j = i + 1;
      while (j < n && text.charCodeAt(j) !== DOLLAR && isWordChar(text.charCodeAt(j))) j++;
      if (text.charCodeAt(j) !== DOLLAR) {
        i = j;
        continue;
      }
      const tag = text.slice(i, j + 1);
      const end = text.indexOf(tag, j + 1);
      i = end < 0 ? n : end + tag.length;
    } else if (isWordChar(c)) {
      const start = i;
      while (i < n && isWordChar(text.charCodeAt(i))) i++;
      // E'...': backslash escapes whatever the setting.
      if (i - start === 1 && (c === 0x45 || c === 0x65) && text.charCodeAt(i) === QUOTE) i = escapedEnd(text, i);
      // U&'...': with the setting off PostgreSQL refuses it, with it on a backslash starts a Unicode escape and never hides a quote.
      else if (i - start === 1 && (c === 0x55 || c === 0x75) && text.charCodeAt(i) === AMPERSAND && text.charCodeAt(i + 1) === QUOTE) i = plainEnd(text, i + 1, true);
    } else i++;
  }
  return false;
}

/** The index after the plain literal opening at `open` ('' is a quote); -1 when it holds a backslash or does not end. */
function plainEnd(text: string, open: number, unicode = false): number {
  let i = open + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH && !unicode) return -1;
    if (c === QUOTE) {
      if (text.charCodeAt(i + 1) !== QUOTE) return i + 1;
      i += 2;
    } else i++;
  }
  return text.length;
}

/** The index after the E'...' literal opening at `open`. */
function escapedEnd(text: string, open: number): number {
  let i = open + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i += 2;
    else if (c === QUOTE) {
      if (text.charCodeAt(i + 1) === QUOTE) i += 2;
      else return i + 1;
    } else i++;
  }
  return text.length;
}
