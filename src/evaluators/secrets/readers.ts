/**
 * The pieces a credential format is read with: character classes and readers of what
 * follows a prefix (formats.ts, providers.ts, config-forms.ts). PURE. Every reader reads a
 * bounded number of characters past the prefix, or walks a run once and resumes after it,
 * so a scan stays linear in the text.
 */

/**
 * What follows a prefix: the end of the token that starts at `at` (the prefix's start), or
 * -1 when none does; `next` is where the scan resumes (past everything read). `start`, when
 * set, is where the reported value starts instead of `at` (a password after `user:`).
 */
export type Reader = (text: string, at: number, afterPrefix: number, scan: ScanState) => ReadResult;
export interface ReadResult {
  end: number;
  next: number;
  start?: number;
}

/** What one scan remembers: where the next `-----END` is (monotonic, so PEM scans read the text once). */
export interface ScanState {
  pemEndAt: number;
}

/** A credential format: the literal prefixes it starts with and how the rest is read. */
export interface FormatOf<K extends string> {
  readonly kind: K;
  readonly prefixes: readonly string[];
  /** Whether the prefix must not follow a letter or digit (`sk-` in `task-…`). */
  readonly boundary: boolean;
  readonly read: Reader;
}

export const isDigit = (c: number) => c >= 48 && c <= 57;
export const isUpper = (c: number) => c >= 65 && c <= 90;
export const isLower = (c: number) => c >= 97 && c <= 122;
export const isAlpha = (c: number) => isUpper(c) || isLower(c);
export const isAlnum = (c: number) => isDigit(c) || isUpper(c) || isLower(c);
export const isUpperNum = (c: number) => isDigit(c) || isUpper(c);
export const isHexLower = (c: number) => isDigit(c) || (c >= 97 && c <= 102);
export const isHex = (c: number) => isHexLower(c) || (c >= 65 && c <= 70);
export const isWord = (c: number) => isAlnum(c) || c === 95;
export const isB64Url = (c: number) => isWord(c) || c === 45;
/** Standard base64 with padding: letters, digits, `+`, `/`, `=`. */
export const isB64 = (c: number) => isAlnum(c) || c === 43 || c === 47 || c === 61;

/** Variable-length tokens are at most this long; a longer run is some other text. */
export const TOKEN_MAX = 512;

/** The end of the run of `accepts` characters from `from` (walked whole, however long). */
export function runEnd(text: string, from: number, accepts: (c: number) => boolean): number {
  let i = from;
  while (i < text.length && accepts(text.charCodeAt(i))) i++;
  return i;
}

/** A token of `min` to `max` characters of `chars`, not followed by another such character. */
export function token(chars: (c: number) => boolean, min: number, max = TOKEN_MAX): Reader {
  return (text, _at, after) => {
    const end = runEnd(text, after, chars);
    const length = end - after;
    return { end: length >= min && length <= max ? end : -1, next: Math.max(end, after) };
  };
}

/** Like token, and the character after it must not continue a word either. */
export function exact(chars: (c: number) => boolean, length: number, stop: (c: number) => boolean = isWord): Reader {
  return (text, _at, after) => {
    const end = runEnd(text, after, chars);
    const ok = end - after === length && (end >= text.length || !stop(text.charCodeAt(end)));
    return { end: ok ? end : -1, next: Math.max(end, after) };
  };
}

/**
 * Parts of fixed lengths joined by one separator (`SG.<22>.<43>`, `PMAK-<24>-<34>`): each
 * part a run of `chars` of exactly its length, or within its `[min, max]`.
 */
export function parts(chars: (c: number) => boolean, separator: number, lengths: ReadonlyArray<number | readonly [number, number]>): Reader {
  return (text, _at, after) => {
    let i = after;
    for (const [n, length] of lengths.entries()) {
      const end = runEnd(text, i, chars);
      const [min, max] = typeof length === 'number' ? [length, length] : length;
      if (end - i < min || end - i > max) return { end: -1, next: Math.max(end, after) };
      if (n === lengths.length - 1) return end < text.length && isWord(text.charCodeAt(end)) ? { end: -1, next: end } : { end, next: end };
      if (text.charCodeAt(end) !== separator) return { end: -1, next: end };
      i = end + 1;
    }
    return { end: -1, next: i };
  };
}

/**
 * A reader that first checks what follows the shared prefix it was found by: one search for
 * `gh` serves the five GitHub prefixes, `xox` the Slack ones, and so on (each search reads
 * the text once). `rest` are the accepted continuations; the token is read after them.
 */
export function after(rest: readonly string[], read: Reader): Reader {
  return (text, at, afterPrefix, scan) => {
    for (const r of rest) if (text.startsWith(r, afterPrefix)) return read(text, at, afterPrefix + r.length, scan);
    return { end: -1, next: afterPrefix };
  };
}
