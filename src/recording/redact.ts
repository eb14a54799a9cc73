/**
 * Field redaction for recorded steps. A rule is either a field name (`password`: that key
 * at any depth) or a dotted path from the step (`input.card_number`: that one field).
 * Names compare case-insensitively with `-` read as `_`, so `API-Key` is `api_key`.
 * Redacted values become "[REDACTED]". Pure; the input is never modified.
 */

export const REDACTED = '[REDACTED]';

/** Always redacted, whatever GUARD_RECORD_REDACT says. */
export const DEFAULT_REDACT_NAMES: readonly string[] = Object.freeze([
  'password',
  'passwd',
  'secret',
  'client_secret',
  'token',
  'access_token',
  'refresh_token',
  'api_key',
  'apikey',
  'authorization',
  'private_key',
  'cookie',
]);

export interface Redactor {
  /** A redacted copy (shares nothing mutable with the input). */
  redact(value: unknown): unknown;
}

const normalise = (key: string) => key.trim().toLowerCase().replace(/-/g, '_');

export function createRedactor(rules: readonly string[], includeDefaults = true): Redactor {
  const names = new Set<string>();
  const paths: string[][] = [];
  for (const rule of [...(includeDefaults ? DEFAULT_REDACT_NAMES : []), ...rules]) {
    const parts = rule.split('.').map(normalise).filter((p) => p !== '');
    if (parts.length === 1) names.add(parts[0]!);
    else if (parts.length > 1) paths.push(parts);
  }
  const redactAt = (value: unknown, path: readonly string[]): unknown => {
    if (Array.isArray(value)) return value.map((item) => redactAt(item, path));
    if (value === null || typeof value !== 'object') return value;
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
      const k = normalise(key);
      const here = [...path, k];
      out[key] = names.has(k) || paths.some((p) => sameList(p, here)) ? REDACTED : redactAt(inner, here);
    }
    return out;
  };
  return { redact: (value) => redactAt(value, []) };
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
