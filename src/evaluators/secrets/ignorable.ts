/**
 * Default-ignorable code points (zero-width space, soft hyphen, word joiner, variation
 * selectors, tag characters, ...) render as nothing, so one placed inside a token hides it
 * from a scan of the text as written while a reader, or a program that drops them, still
 * gets the token. Scanners run on the text without them and report what they found as
 * written, invisible characters included, so masking covers the whole of it. PURE.
 */

const IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
const IGNORABLES = /\p{Default_Ignorable_Code_Point}+/gu;

/**
 * Literals that a text holding a default-ignorable code point contains one of: the
 * ignorable characters of the BMP and the high surrogates of the planes the others are in
 * (a prefilter passes such a text to the scan, whose prefix may be split by one).
 */
export const IGNORABLE_LITERALS: readonly string[] = Object.freeze(
  [
    [0xad, 0xad],
    [0x34f, 0x34f],
    [0x61c, 0x61c],
    [0x115f, 0x1160],
    [0x17b4, 0x17b5],
    [0x180b, 0x180f],
    [0x200b, 0x200f],
    [0x202a, 0x202e],
    [0x2060, 0x206f],
    [0x3164, 0x3164],
    [0xfe00, 0xfe0f],
    [0xfeff, 0xfeff],
    [0xffa0, 0xffa0],
    [0xfff0, 0xfff8],
    [0xd82f, 0xd82f],
    [0xd834, 0xd834],
    [0xdb40, 0xdb43],
  ].flatMap(([from, to]) => Array.from({ length: to! - from! + 1 }, (_, i) => String.fromCharCode(from! + i))),
);

/** Whether `text` holds a default-ignorable code point: a caller running two scans tests once and passes the answer on. */
export function hasIgnorable(text: string): boolean {
  // An ASCII text (as many UTF-8 bytes as characters) holds none, and V8 counts the bytes of
  // a one-byte string far faster than the regex reads it: -12% CPU per 2 KB secrets check.
  return Buffer.byteLength(text, 'utf8') !== text.length && IGNORABLE.test(text);
}

/**
 * `text` without its default-ignorable code points, and `written`, which gives a find in
 * that text as it is written in `text` (the k-th report of a string is its k-th
 * occurrence); null when `text` holds none, so the common text costs one test.
 */
export function visibleOf(text: string, holdsIgnorable = hasIgnorable(text)): { visible: string; written: (found: string) => string } | null {
  if (!holdsIgnorable) return null;
  // origin[i]: where the i-th character of the visible text is in `text`.
  const origin: number[] = [];
  let visible = '';
  let at = 0;
  for (const m of text.matchAll(IGNORABLES)) {
    for (let i = at; i < m.index; i++) origin.push(i);
    visible += text.slice(at, m.index);
    at = m.index + m[0].length;
  }
  for (let i = at; i < text.length; i++) origin.push(i);
  visible += text.slice(at);
  const cursors = new Map<string, number>();
  const written = (found: string): string => {
    const start = found === '' ? -1 : visible.indexOf(found, cursors.get(found) ?? 0);
    if (start < 0) return found;
    cursors.set(found, start + 1);
    return text.slice(origin[start], origin[start + found.length - 1]! + 1);
  };
  return { visible, written };
}

/** Runs `scan` on `text` without its default-ignorable code points, reporting each find as written in `text`. */
export function scanVisible(
  text: string,
  scan: (visible: string, report: (found: string) => boolean) => boolean,
  report: (found: string) => boolean,
  holdsIgnorable = hasIgnorable(text),
): boolean {
  const v = visibleOf(text, holdsIgnorable);
  if (v === null) return scan(text, report);
  return scan(v.visible, (found) => report(v.written(found)));
}
