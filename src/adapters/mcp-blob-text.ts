/**
 * MCP carries bytes as base64: a resource's contents as `blob` (beside or in place of
 * `text`), an image's or audio's as `data`. A server sends a file it cannot type as a blob
 * (a `.env`, a key, `application/octet-stream`), and base64 hides from an output control
 * every secret and card number in it. What a post control checks is the output with each
 * such value that decodes to text also given as that text (`text` of the object), whatever
 * its mime type claims (textOfBytes says which bytes are text); bytes that are no text
 * (a PNG, a PDF) stay as they are. Only the check sees the decoded text: the client gets
 * the server's message unchanged.
 */

import { textOfBytes } from './bytes-text.js';

/** Deeper than this, a value is checked as it is: the nesting the guard server reads a step to (server/json-body.ts MAX_JSON_DEPTH). */
const MAX_DEPTH = 128;

/** `value` with the text of every base64 blob (or image and audio data) that is text; `value` itself when it holds none. */
export function withBlobText(value: unknown): unknown {
  // Most outputs hold none: looked for first, without copying (a 10,000-row result: 0.86 against 4.0 ms a walk; its JSON.stringify 2.5 ms).
  return holdsEncoded(value, 0) ? withText(value, 0) : value;
}

function holdsEncoded(value: unknown, depth: number): boolean {
  if (typeof value !== 'object' || value === null || depth > MAX_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (holdsEncoded(value[i], depth + 1)) return true;
    return false;
  }
  const object = value as Record<string, unknown>;
  if (typeof object.blob === 'string' || isMedia(object)) return true;
  for (const key in object) if (Object.hasOwn(object, key) && holdsEncoded(object[key], depth + 1)) return true;
  return false;
}

function withText(value: unknown, depth: number): unknown {
  if (typeof value !== 'object' || value === null || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) {
    let changed = false;
    const items = value.map((item) => {
      const seen = withText(item, depth + 1);
      changed ||= seen !== item;
      return seen;
    });
    return changed ? items : value;
  }
  const object = value as Record<string, unknown>;
  let copy: Record<string, unknown> | null = null;
  for (const [key, item] of Object.entries(object)) {
    const seen = withText(item, depth + 1);
    if (seen !== item) (copy ??= { ...object })[key] = seen;
  }
  const encoded = typeof object.blob === 'string' ? object.blob : isMedia(object) ? object.data : undefined;
  const decoded = typeof encoded === 'string' && encoded !== '' ? textOfBytes(Buffer.from(encoded, 'base64'), object.mimeType) : null;
  if (decoded === null) return copy ?? value;
  copy ??= { ...object };
  // A server that sends `text` too cannot hide the blob behind it: the check reads both.
  copy.text = typeof object.text === 'string' ? `${object.text}\n${decoded}` : decoded;
  return copy;
}

function isMedia(object: Record<string, unknown>): object is { data: string } {
  return (object.type === 'image' || object.type === 'audio') && typeof object.data === 'string';
}
