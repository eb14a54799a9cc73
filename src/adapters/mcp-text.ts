/**
 * How the MCP gateway compares and shows the strings a client controls: request ids and
 * methods, which a lenient peer may read more loosely than the gateway does.
 */
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/**
 * The key under which a client's pending request is known. Ids that a lenient peer could
 * take for one another share a key ("1", " 1", "01", "1\u200b", a full-width "１" and 1), so
 * that one of them is refused while another is pending.
 */
export function looseKeyOf(id: RequestId): string {
  if (typeof id === 'number') return String(id);
  const plain = id.normalize('NFKC').replace(/\p{Default_Ignorable_Code_Point}/gu, '');
  const trimmed = plain.trim();
  return trimmed !== '' && Number.isFinite(Number(trimmed)) ? String(Number(trimmed)) : plain;
}

/**
 * A method as a lenient server might read it: case, width, whitespace, control characters
 * (a NUL ends the string for a C server) and invisible ones (format characters, variation
 * selectors, combining joiners, fillers: every default-ignorable code point) folded. Case is
 * folded through the upper case first: a server comparing upper cases (.NET's
 * OrdinalIgnoreCase) reads the dotless `ı` as `i` and `ß` as `ss`, which lower case keeps apart.
 */
export function folded(method: string): string {
  return method.normalize('NFKC').toUpperCase().toLowerCase().replace(/[\s\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/gu, '');
}

/** A name for logs and errors, its invisible and non-ASCII characters written as escapes. */
export function shown(name: string): string {
  return JSON.stringify(name).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A value a client sent (a request id, a task id) for logs: as JSON, its non-ASCII characters escaped, so that a line separator (U+2028) starts no line. */
export function valueText(value: unknown): string {
  return (JSON.stringify(value) ?? 'undefined').replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A method for logs: as it is when plain printable ASCII, else as `shown` writes it. */
export function methodText(method: string): string {
  return /^[\x20-\x7e]*$/.test(method) ? method : shown(method);
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
