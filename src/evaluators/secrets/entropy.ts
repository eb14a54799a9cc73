/**
 * Generic secrets: a high-entropy token assigned to a name that says it is secret
 * (`password=…`, `"api_key": "…"`, `token: …`). PURE. Each occurrence of a word is
 * followed for a bounded number of characters, so the scan is linear in the text.
 */

/** Words that mark what follows as secret, matched in the ASCII-lowercased text. */
export const SECRET_NAME_WORDS: readonly string[] = Object.freeze(['key', 'secret', 'token', 'passw', 'pwd', 'credential']);

/** Tokens shorter than this are not measured: too short to tell a secret from a word. */
export const ENTROPY_MIN_LENGTH = 8;
/** Tokens are read up to this length; a longer one is measured on its first part. */
const TOKEN_MAX = 256;
/** Characters of a name after its word (`_id`, `Key2`) and of the spaces around `=`/`:`. */
const NAME_TAIL_MAX = 32;
const SPACE_MAX = 8;

const isNameChar = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c === 45;
const isSpace = (c: number) => c === 32 || c === 9;
const isQuote = (c: number) => c === 34 || c === 39;
/** Where an unquoted value ends: space, quote, and what separates values in JSON, URLs and lists. */
const endsBare = (c: number) =>
  c <= 32 || isQuote(c) || c === 44 || c === 59 || c === 38 || c === 125 || c === 93 || c === 41 || c === 60 || c === 92;

/** Shannon entropy of `s` in bits per character. */
export function shannonEntropy(s: string): number {
  const counts = new Map<number, number>();
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / s.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/**
 * `text` with A-Z lowercased and nothing else changed, so that positions in it are positions
 * in `text` (toLowerCase may change the length: `İ` becomes two characters). `lower` is
 * toLowerCase's result when the caller has it.
 */
export function asciiLower(text: string, lower?: string): string {
  const low = lower ?? text.toLowerCase();
  return low.length === text.length ? low : text.replace(/[A-Z]+/g, (s) => s.toLowerCase());
}

/**
 * Reports each value assigned to a secret-sounding name whose entropy is at least
 * `minEntropy` bits per character. `low` is asciiLower(text).
 */
export function scanHighEntropy(text: string, low: string, minEntropy: number, report: (found: string) => boolean): boolean {
  for (const word of SECRET_NAME_WORDS) {
    let at = low.indexOf(word);
    while (at >= 0) {
      const value = valueAfter(text, at + word.length);
      let next = at + word.length;
      if (value !== null) {
        next = Math.max(next, value.end);
        const found = text.slice(value.start, value.end);
        if (found.length >= ENTROPY_MIN_LENGTH && shannonEntropy(found) >= minEntropy && !report(found)) return false;
      }
      at = low.indexOf(word, next);
    }
  }
  return true;
}

/** The value after a name: the rest of the name, a closing quote, `=`, `:` or `=>`, an opening quote. */
function valueAfter(text: string, from: number): { start: number; end: number } | null {
  const n = text.length;
  let i = from;
  const nameEnd = Math.min(n, from + NAME_TAIL_MAX);
  while (i < nameEnd && isNameChar(text.charCodeAt(i))) i++;
  i = skipQuote(text, i);
  i = skipSpaces(text, i);
  const c = text.charCodeAt(i);
  if (c === 61) {
    i++;
    if (text.charCodeAt(i) === 62) i++;
  } else if (c === 58) i++;
  else return null;
  i = skipSpaces(text, i);
  // A JSON string inside a JSON string writes its quotes as \".
  if (text.charCodeAt(i) === 92 && isQuote(text.charCodeAt(i + 1))) i++;
  const quote = text.charCodeAt(i);
  const quoted = isQuote(quote);
  if (quoted) i++;
  const start = i;
  const limit = Math.min(n, start + TOKEN_MAX);
  while (i < limit) {
    const d = text.charCodeAt(i);
    if (quoted ? d === quote || d === 92 || d < 32 : endsBare(d)) break;
    i++;
  }
  return i > start ? { start, end: i } : null;
}

/** Past a closing quote, written as it is or escaped (`\\"`). */
function skipQuote(text: string, i: number): number {
  if (isQuote(text.charCodeAt(i))) return i + 1;
  if (text.charCodeAt(i) === 92 && isQuote(text.charCodeAt(i + 1))) return i + 2;
  return i;
}

function skipSpaces(text: string, from: number): number {
  let i = from;
  const limit = Math.min(text.length, from + SPACE_MAX);
  while (i < limit && isSpace(text.charCodeAt(i))) i++;
  return i;
}
