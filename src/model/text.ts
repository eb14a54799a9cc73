/**
 * PURE: text every store can keep. PostgreSQL refuses the NUL character in text and in
 * JSON (`\u0000`), and a lone UTF-16 surrogate is not Unicode at all (PostgreSQL's JSON
 * refuses it; as text it would be changed into U+FFFD on the way to the database).
 * SQLite would keep both, so the two stores would disagree. The API refuses such text
 * with a 422 naming the field (`textIssuesOf`); records the server derives from what
 * agents send (events, recorded steps) replace those characters with U+FFFD instead
 * (`storableText`, `storableJsonText`), the same on both stores.
 */
import type { FieldIssue } from './issues.js';
import { formatPath } from './issues.js';

/**
 * Holds neither NUL nor a lone surrogate, as most text: two builtin scans, cheaper than one
 * regex test (a one-byte string is well formed without being read).
 */
function isPlainText(text: string): boolean {
  return text.isWellFormed() && !text.includes('\u0000');
}
/** NUL, a high surrogate without its low one, or a low surrogate without its high one. */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Why a store cannot keep `text` as it is, or null when it can. */
export function unstorableTextReason(text: string): string | null {
  if (isPlainText(text)) return null;
  if (text.includes('\u0000')) return 'must not contain the NUL character (\\u0000)';
  UNSTORABLE.lastIndex = 0;
  return UNSTORABLE.test(text) ? 'must be valid Unicode text (it holds a lone UTF-16 surrogate)' : null;
}

/** `text` with NUL and lone surrogates replaced by U+FFFD; the same string when there are none. */
export function storableText(text: string): string {
  if (isPlainText(text)) return text;
  return text.replace(UNSTORABLE, '\uFFFD');
}

/**
 * JSON text (as JSON.stringify writes it) whose strings and keys hold no `\u0000` and
 * no lone surrogate escape: JSON.stringify writes both as escapes (`\u0000`, `\ud800`), and
 * writes well-formed pairs as they are, so every such escape not itself escaped
 * (`\\u0000` is a backslash and "u0000") is replaced by `\ufffd`.
 */
export function storableJsonText(json: string): string {
  if (!json.includes('\\u')) return json;
  return json.replace(/(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/gi, '$1\\ufffd');
}

/** How deep `textIssuesOf` looks; bodies are already bounded by the JSON parser's depth limit. */
const MAX_DEPTH = 256;

/**
 * Every string (keys included) in `value` that a store cannot keep, as field issues with
 * the path where it was found. At most `max` issues: one bad field is enough to refuse.
 */
export function textIssuesOf(value: unknown, prefix: readonly PropertyKey[] = [], max = 10): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const visit = (v: unknown, path: PropertyKey[], depth: number): void => {
    if (issues.length >= max || depth > MAX_DEPTH) return;
    if (typeof v === 'string') {
      const reason = unstorableTextReason(v);
      if (reason !== null) issues.push({ field: formatPath(path), code: 'invalid_text', message: `${fieldLabel(path)} ${reason}` });
      return;
    }
    if (v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) visit(v[i], [...path, i], depth + 1);
      return;
    }
    for (const [key, inner] of Object.entries(v as Record<string, unknown>)) {
      const reason = unstorableTextReason(key);
      if (reason !== null) {
        issues.push({ field: formatPath(path), code: 'invalid_text', message: `a key of ${fieldLabel(path)} ${reason}` });
        if (issues.length >= max) return;
        continue;
      }
      visit(inner, [...path, key], depth + 1);
    }
  };
  visit(value, [...prefix], 0);
  return issues;
}

function fieldLabel(path: readonly PropertyKey[]): string {
  return path.length === 0 ? 'the value' : formatPath(path);
}
