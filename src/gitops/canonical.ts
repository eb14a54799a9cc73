/** Canonical JSON: sorted keys, no undefined. Equal data gives equal text (diffs, fingerprints). */
import { createHash } from 'node:crypto';

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

/**
 * The fingerprint of an MCP tool as declared: sha256 of the canonical JSON of its
 * description, input schema and annotations (absent ones left out). mcp-pin writes it,
 * validate checks a pinned one against its fields, the gateway compares live tools with it.
 */
export function mcpToolFingerprint(tool: { description?: string | undefined; input_schema?: unknown; annotations?: unknown }): string {
  const essence = { description: tool.description, input_schema: tool.input_schema, annotations: tool.annotations };
  return `sha256:${createHash('sha256').update(canonicalJson(essence)).digest('hex')}`;
}

/** The pinned tools whose fingerprint disagrees with their fields (edited without re-pinning). */
export function fingerprintMismatches(
  tools: ReadonlyArray<{ description?: string | undefined; input_schema?: unknown; annotations?: unknown; fingerprint: string }>,
): Array<{ index: number; actual: string }> {
  const out: Array<{ index: number; actual: string }> = [];
  tools.forEach((tool, index) => {
    const actual = mcpToolFingerprint(tool);
    if (actual !== tool.fingerprint) out.push({ index, actual });
  });
  return out;
}
