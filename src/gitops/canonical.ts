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

/** Which fields a pinned fingerprint covers: 2 (`sha256-v2:`) adds title and output_schema to 1 (`sha256:`). */
export type FingerprintVersion = 1 | 2;

export const CURRENT_FINGERPRINT_VERSION: FingerprintVersion = 2;

/** The tool fields each fingerprint version covers, for messages and docs. */
export const FINGERPRINTED_FIELDS: Record<FingerprintVersion, readonly string[]> = {
  1: ['description', 'input_schema', 'annotations'],
  2: ['title', 'description', 'input_schema', 'output_schema', 'annotations'],
};

export interface FingerprintedTool {
  title?: string | undefined;
  description?: string | undefined;
  input_schema?: unknown;
  output_schema?: unknown;
  annotations?: unknown;
}

export function fingerprintVersionOf(fingerprint: string): FingerprintVersion {
  return fingerprint.startsWith('sha256-v2:') ? 2 : 1;
}

function sha256(prefix: string, value: unknown): string {
  return `${prefix}${createHash('sha256').update(canonicalJson(value)).digest('hex')}`;
}

/**
 * The fingerprint of an MCP tool as declared: sha256 of the canonical JSON of the fields
 * its version covers (absent ones left out). mcp-pin writes the current version, validate
 * checks a pinned one against its fields, the gateway compares live tools with it in the
 * version of the pin (so pins of an earlier guardctl keep matching).
 */
export function mcpToolFingerprint(tool: FingerprintedTool, version: FingerprintVersion = CURRENT_FINGERPRINT_VERSION): string {
  if (version === 1) return sha256('sha256:', { description: tool.description, input_schema: tool.input_schema, annotations: tool.annotations });
  return sha256('sha256-v2:', { title: tool.title, description: tool.description, input_schema: tool.input_schema, output_schema: tool.output_schema, annotations: tool.annotations });
}

/**
 * The fingerprint of a server's initialize instructions (null: none, as an empty string is).
 * Drift reports carry it in place of the text.
 */
export function mcpInstructionsFingerprint(instructions: unknown): string {
  return sha256('sha256-v2:', { instructions: instructions === undefined || instructions === '' ? null : instructions });
}

/**
 * The pinned tools whose fingerprint disagrees with their fields (edited without
 * re-pinning). A `sha256:` pin that carries a title or an output schema disagrees too: its
 * fingerprint does not cover them, so nothing would check them.
 */
export function fingerprintMismatches(tools: ReadonlyArray<FingerprintedTool & { fingerprint: string }>): Array<{ index: number; actual: string }> {
  const out: Array<{ index: number; actual: string }> = [];
  tools.forEach((tool, index) => {
    const version = fingerprintVersionOf(tool.fingerprint);
    const uncovered = version === 1 && (tool.title !== undefined || tool.output_schema !== undefined);
    const actual = mcpToolFingerprint(tool, uncovered ? CURRENT_FINGERPRINT_VERSION : version);
    if (actual !== tool.fingerprint) out.push({ index, actual });
  });
  return out;
}
