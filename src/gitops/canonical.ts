/** Canonical JSON: sorted keys, no undefined. Equal data gives equal text (diffs, fingerprints). */

export function canonicalise(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : canonicalise(v)));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      // defineProperty, not assignment: a `__proto__` key parsed from JSON is data, and assigning it
      // would set the prototype instead, so `{"a":1,"__proto__":{}}` would read as `{"a":1}`.
      if (v !== undefined) Object.defineProperty(out, key, { value: canonicalise(v), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return value;
}

export function canonicalJson(value: unknown): string {
  return JSON.stringify(canonicalise(value));
}

export function deepEqual(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
