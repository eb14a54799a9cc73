/**
 * Masking of what a control matched (docs/security.md). A guard must not echo what it
 * guards: a card number or a key that a control caught is shown as a short masked form,
 * `4111…1111`, in every answer, event, excerpt and screen, unless the control opts in to
 * the full text (reveal_match). The engine applies this to every evaluator's outcome
 * (engine/present.ts); evaluators that build their own text from a value can use it too.
 */

/** The mark that stands for the hidden middle of a masked text. */
export const MASK = '…';

/**
 * The masked form of `text`: at most 4 characters at each end (`4111…1111`), fewer for
 * short texts (one at each end below 16 characters, none below 8), never the whole.
 */
export function maskMatch(text: string): string {
  // Characters, not UTF-16 units, for the short texts where the difference shows.
  const length = text.length > 64 ? text.length : Array.from(text).length;
  const keep = length >= 16 ? 4 : length >= 8 ? 1 : 0;
  if (keep === 0) return MASK;
  // 16 units hold the 4 characters kept at each end whole, surrogate pairs included.
  const head = Array.from(text.slice(0, 16)).slice(0, keep).join('');
  const tail = Array.from(text.slice(-16)).slice(-keep).join('');
  return `${head}${MASK}${tail}`;
}

/** `text` with every occurrence of each (non-empty) string of `found` masked; longer ones first. */
export function maskFoundIn(text: string, found: readonly string[]): string {
  let out = text;
  const longestFirst = [...new Set(found)].filter((f) => f !== '').sort((a, b) => b.length - a.length);
  for (const f of longestFirst) if (out.includes(f)) out = out.split(f).join(maskMatch(f));
  return out;
}

/** A JSON value with maskFoundIn applied to every string in it (keys stay as they are). */
export function maskFoundInJson(value: unknown, found: readonly string[]): unknown {
  return mapStrings(value, (s) => maskFoundIn(s, found));
}

/**
 * A JSON value with every string that occurs in `text` masked, when it is at least
 * `minLength` characters long: the net under evaluators that put part of the value in
 * their metadata without reporting it in `found` (short labels such as "high" are left).
 */
export function maskEchoesInJson(value: unknown, text: string, minLength = 8): unknown {
  return mapStrings(value, (s) => (s.length >= minLength && text.includes(s) ? maskMatch(s) : s));
}

/** A copy of a JSON value with `map` applied to every string in it (keys stay as they are). */
function mapStrings(value: unknown, map: (s: string) => string): unknown {
  if (typeof value === 'string') return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value as Record<string, unknown>)) out[key] = mapStrings(inner, map);
    return out;
  }
  return value;
}

const QUOTED = /"([^"\n]+)"/g;

/**
 * `message` with every double-quoted part that also occurs in `text` (the value the
 * evaluator looked at) masked: the net under evaluators that quote what they found in
 * their message instead of reporting it in `found`.
 */
export function maskQuotedEchoes(message: string, text: string): string {
  if (!message.includes('"')) return message;
  return message.replace(QUOTED, (whole, quoted: string) => (text.includes(quoted) ? `"${maskMatch(quoted)}"` : whole));
}
