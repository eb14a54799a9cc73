/**
 * The net under every message and metadata string a match carries (docs/security.md): a
 * text an evaluator built itself (a json failing path made of object keys, an sql
 * identifier it decoded or lowercased, an error) is masked with the scanners of excerpts
 * (sensitive.ts), so that no secret, card number or other pii value leaves the engine in
 * clear, whatever evaluator wrote it. The text is also read in ASCII upper and lower case,
 * so that a key an evaluator lowercased (`akiaiosfodnn7example`) is still known. PURE.
 */
import { maskMatch } from './mask.js';
import { mergeRanges, scanSensitive } from './sensitive.js';

/** Values masked per text at most; past that the rest of the text is replaced by `…`. */
const MAX_VALUES = 1_000;

/** ASCII-only case mapping: the same length as `text`, so positions carry over. */
const asciiCase = (text: string, upper: boolean) => text.replace(upper ? /[a-z]+/g : /[A-Z]+/g, (s) => (upper ? s.toUpperCase() : s.toLowerCase()));

/**
 * Short texts the scanners found nothing in: an evaluator's fixed message or signal names,
 * a metadata key, come back with every match, and need not be scanned each time. Only
 * clean texts are kept, so this holds nothing a scanner would mask; a memo of a pure
 * function, emptied when full. (prompt_injection through the engine on a 2 KB injected page: 0.77 of the instructions per check.)
 */
const CLEAN_TEXT_MAX = 256;
const CLEAN_TEXTS_MAX = 4096;
const cleanTexts = new Set<string>();

/** `text` with every value a masking evaluator would find in it masked (`4111…1111`). */
export function maskSensitiveIn(text: string): string {
  if (text.length < 6) return text;
  const memo = text.length <= CLEAN_TEXT_MAX;
  if (memo && cleanTexts.has(text)) return text;
  const masked = maskScanned(text);
  if (memo && masked === text) {
    if (cleanTexts.size >= CLEAN_TEXTS_MAX) cleanTexts.clear();
    cleanTexts.add(text);
  }
  return masked;
}

function maskScanned(text: string): string {
  const ranges: Array<[number, number]> = [];
  let complete = true;
  const forms = new Set([text, asciiCase(text, true), asciiCase(text, false)]);
  for (const form of forms) {
    const values = new Set<string>();
    complete =
      scanSensitive(form, (f) => {
        values.add(f);
        return values.size < MAX_VALUES;
      }) && complete;
    for (const v of values) {
      if (v === '') continue;
      for (let at = form.indexOf(v); at >= 0; at = form.indexOf(v, at + 1)) ranges.push([at, at + v.length]);
    }
  }
  if (ranges.length === 0) return complete ? text : maskMatch(text);
  const merged = mergeRanges(ranges);
  let out = '';
  let at = 0;
  for (const [start, end] of merged) {
    out += `${text.slice(at, start)}${maskMatch(text.slice(start, end))}`;
    at = end;
  }
  // A scan stopped at MAX_VALUES leaves the rest unread: it is not shown.
  return complete ? `${out}${text.slice(at)}` : `${out}…`;
}

/** A copy of a JSON value with maskSensitiveIn applied to every string in it, keys included. */
export function maskSensitiveInJson(value: unknown): unknown {
  if (typeof value === 'string') return maskSensitiveIn(value);
  if (Array.isArray(value)) return value.map((item) => maskSensitiveInJson(item));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
      let name = maskSensitiveIn(key);
      // Two keys masked alike stay two keys.
      for (let n = 2; name !== key && Object.hasOwn(out, name); n++) name = `${maskSensitiveIn(key)}#${n}`;
      Object.defineProperty(out, name, { value: maskSensitiveInJson(inner), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}
