import { z } from 'zod';
import type { CompiledCheck, EvaluatorDefinition, EvaluatorOutcome, ScanHint, ValueMemo } from '../types.js';

export const ListConfigSchema = z.strictObject({
  values: z.array(z.string()).min(1, 'values must hold at least one entry'),
  case_sensitive: z.boolean().default(false),
  match_mode: z.enum(['exact', 'contains', 'starts_with']).default('exact'),
  logic: z.enum(['any', 'all']).default('any'),
});
export type ListConfig = z.infer<typeof ListConfigSchema>;

const NO_MATCH: EvaluatorOutcome = Object.freeze({ matched: false, confidence: 1, message: null, metadata: null });

/**
 * The strings a list looks at: a string, or each element of an array; other values as
 * text (through the step's memo when there is one, so an object is serialised once).
 * Values JSON cannot hold (NaN, Infinity, functions, symbols) are skipped: a step comes as
 * JSON, where they would be null, and the scan hint below relies on every string looked at
 * appearing in the value's JSON text.
 */
function stringsOf(value: unknown, memo: ValueMemo | undefined): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return [value];
  const json = (v: object) => (memo ? memo.text(v)! : JSON.stringify(v));
  if (Array.isArray(value)) {
    const out: string[] = [];
    for (const item of value) {
      if (typeof item === 'string') out.push(item);
      else if (typeof item === 'object' && item !== null) out.push(json(item as object));
      else if (isScalar(item)) out.push(String(item));
    }
    return out;
  }
  if (typeof value === 'object') return [json(value)];
  if (isScalar(value)) return [String(value)];
  return undefined;
}

/** A number or boolean that JSON writes as String() does. */
function isScalar(value: unknown): value is number | boolean {
  return typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

/** Entries a scan hint can carry: at most this many distinct ones. */
const MAX_HINT_ENTRIES = 16;

/**
 * The scan hint of a contains or starts_with list (see ScanHint): a match needs one of the
 * entries inside one of the strings looked at, and each of those strings appears in the
 * value's JSON text as it is, except where JSON escapes a character ('"', '\\', control
 * characters). Entries of printable ASCII other than those two are therefore found in the
 * text whenever the list could match; lowercasing is per character for ASCII results, so
 * the same holds for the lowercased text. Lists with other entries declare nothing.
 */
function hintOf(entries: readonly string[], caseSensitive: boolean): ScanHint {
  const distinct = [...new Set(entries)];
  if (distinct.length > MAX_HINT_ENTRIES || !distinct.every((e) => /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/.test(e))) return {};
  // The literals are read on every scan: readonly by type, not frozen (see prefilterOf).
  return { scanPrefilter: Object.freeze({ literals: distinct, folded: !caseSensitive }) };
}

/**
 * A match: what was found goes in `found`, as it appears in the value, never in the message
 * (the engine shows it masked unless the control reveals it: engine/present.ts).
 */
function matchedOf(found: string[]): EvaluatorOutcome {
  return { matched: true, confidence: 1, message: 'list matched', metadata: null, found };
}

/**
 * Where `entry` was hit in `raw`, as `raw` has it: `normed` is `raw` normalised (lowercased
 * or not), and where normalising changed the length the entry itself stands in.
 */
function hitIn(raw: string, normed: string, entry: string, hit: Hit): string {
  if (raw.length !== normed.length) return entry;
  if (hit === HITS.contains) {
    const at = normed.indexOf(entry);
    return raw.slice(at, at + entry.length);
  }
  return hit === HITS.starts_with ? raw.slice(0, entry.length) : raw;
}

export const listEvaluator: EvaluatorDefinition = {
  name: 'list',
  description:
    'Matches the selected string (or each string of a selected array) against a list of values: ' +
    'exact, contains or starts_with; any or all entries; case-insensitive by default.',
  configSchema: z.toJSONSchema(ListConfigSchema, { io: 'input' }),
  zodSchema: ListConfigSchema,
  compile(config) {
    const { values, case_sensitive, match_mode, logic } = ListConfigSchema.parse(config);
    // Entries are normalised once here so that evaluation only lowercases the input.
    const entries = case_sensitive ? values.slice() : values.map((v) => v.toLowerCase());
    const norm = case_sensitive ? asIs : lower;
    // Each check is built by its own function so that it holds only what it reads: a
    // server keeps one per list control, thousands of them.
    if (logic === 'any' && match_mode === 'exact') return anyExact(new Set(entries), norm);
    const check = logic === 'any' ? anyHit(entries, norm, HITS[match_mode]) : allHit(entries, norm, HITS[match_mode]);
    // An exact list with logic any (above) answers with one set lookup: searching its
    // entries would cost more, so only these declare a scan hint.
    return Object.assign(check, hintOf(entries, case_sensitive));
  },
};

type Norm = (s: string, memo?: ValueMemo) => string;
const asIs: Norm = (s) => s;
const lower: Norm = (s, memo) => (memo ? memo.lower(s) : s.toLowerCase());

type Hit = (s: string, entry: string) => boolean;
const HITS: Record<ListConfig['match_mode'], Hit> = {
  exact: (s, e) => s === e,
  contains: (s, e) => s.includes(e),
  starts_with: (s, e) => s.startsWith(e),
};

function anyExact(exact: ReadonlySet<string>, norm: Norm): CompiledCheck {
  return (value, memo) => {
    if (typeof value === 'string') {
      const s = norm(value, memo);
      return exact.has(s) ? matchedOf([value]) : NO_MATCH;
    }
    const strings = stringsOf(value, memo);
    if (strings === undefined) return NO_MATCH;
    for (const raw of strings) {
      const s = norm(raw, memo);
      if (exact.has(s)) return matchedOf([raw]);
    }
    return NO_MATCH;
  };
}

function anyHit(entries: readonly string[], norm: Norm, hit: Hit): CompiledCheck {
  return (value, memo) => {
    const strings = stringsOf(value, memo);
    if (strings === undefined) return NO_MATCH;
    for (const raw of strings) {
      const s = norm(raw, memo);
      for (const e of entries) if (hit(s, e)) return matchedOf([hitIn(raw, s, e, hit)]);
    }
    return NO_MATCH;
  };
}

/** logic all: every list entry must be found in some selected string. */
function allHit(entries: string[], norm: Norm, hit: Hit): CompiledCheck {
  return (value, memo) => {
    const strings = stringsOf(value, memo);
    if (strings === undefined || strings.length === 0) return NO_MATCH;
    const normed = strings.map((s) => norm(s, memo));
    const hits: string[] = [];
    for (const e of entries) {
      const i = normed.findIndex((s) => hit(s, e));
      if (i < 0) return NO_MATCH;
      hits.push(hitIn(strings[i]!, normed[i]!, e, hit));
    }
    return matchedOf(hits);
  };
}
