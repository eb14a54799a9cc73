/**
 * What the fuzz test sends: a seeded PRNG, random JSON values of every awkward kind
 * (wrong types, huge and odd strings, NUL, lone surrogates, deep nesting), valid bodies
 * of each route with one part swapped for such a value, path parameters and query strings.
 * The same seed gives the same requests.
 */
import { sqlControl } from './helpers.js';

export type Rng = () => number;

/** mulberry32: small, fast and good enough to pick inputs; the same seed, the same sequence. */
export function prngOf(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const pick = <T>(rng: Rng, items: readonly T[]): T => items[Math.floor(rng() * items.length)]!;
const int = (rng: Rng, max: number) => Math.floor(rng() * max);

const ODD_STRINGS = [
  '',
  ' ',
  'a\u0000b',
  '\u0000',
  'a\ud800b',
  '\udc00',
  '\ud83d\ude00',
  '../../etc/passwd',
  "'; DROP TABLE controls; --",
  '%00',
  '\\u0000',
  '<script>',
  'Ω≈ç√',
  '\u202e',
  '__proto__',
  'constructor',
  'deny',
  'pre',
  'tool',
  'input.query',
  '1',
  '-1',
  '1e309',
];

export function randomString(rng: Rng): string {
  switch (int(rng, 6)) {
    case 0:
      return pick(rng, ODD_STRINGS);
    case 1:
      // Huge, but under the default body limit most of the time.
      return pick(rng, ['x', '\u0000', 'é', '\ud800']).repeat(pick(rng, [129, 513, 5000, 300_000]));
    case 2:
      return Array.from({ length: int(rng, 12) }, () => String.fromCharCode(int(rng, 0x10000))).join('');
    default:
      return Array.from({ length: 1 + int(rng, 10) }, () => pick(rng, 'abcdefghijklmnopqrstuvwxyz0123456789-_.:'.split(''))).join('');
  }
}

const NUMBERS = [0, -0, 1, -1, 0.5, 2 ** 53, -(2 ** 53), 2 ** 63, 1e308, -1e308, 1e-300, 128, 129, 101];

/** Any JSON value, `depth` levels of nesting at most (plus, sometimes, a very deep one). */
export function randomValue(rng: Rng, depth = 3): unknown {
  const kind = int(rng, depth <= 0 ? 4 : 8);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng() < 0.5;
    case 2:
      return pick(rng, NUMBERS);
    case 3:
      return randomString(rng);
    case 4:
    case 5:
      return Array.from({ length: int(rng, 4) }, () => randomValue(rng, depth - 1));
    case 6:
      return Object.fromEntries(
        Array.from({ length: int(rng, 4) }, () => [rng() < 0.7 ? pick(rng, FIELD_NAMES) : randomString(rng), randomValue(rng, depth - 1)]),
      );
    default:
      return deeplyNested(rng);
  }
}

/** Arrays or objects nested around the JSON parser's limit (128 levels) and beyond it. */
function deeplyNested(rng: Rng): unknown {
  let value: unknown = randomString(rng);
  const levels = pick(rng, [20, 127, 129, 400]);
  for (let i = 0; i < levels; i++) value = rng() < 0.5 ? [value] : { a: value };
  return value;
}

const FIELD_NAMES = [
  'name', 'agent_name', 'data', 'enabled', 'description', 'scope', 'selector', 'evaluator', 'action', 'decision',
  'config', 'pattern', 'path', 'changes', 'op', 'events', 'metadata', 'steps', 'limit', 'cursor', 'revision',
  'managed_by', 'source', 'stage', 'step', 'input', 'type', 'condition', 'mode', 'control_name',
];

function event(controlId: number): Record<string, unknown> {
  return {
    control_execution_id: 'ce-1', trace_id: 't', span_id: 's', agent_name: 'fuzz-bot', control_id: controlId,
    control_name: 'fuzz-control', check_stage: 'pre', applies_to: 'tool', action: 'deny', matched: true,
    confidence: 1, timestamp: new Date(0).toISOString(), execution_duration_ms: 1, evaluator_name: 'regex',
    selector_path: 'input', error_message: null, metadata: null,
  };
}

/** A valid body of each route that takes one (by `METHOD url`), before the fuzzer mutates it. */
export function validBodyOf(route: string, rng: Rng, controlId: number): unknown {
  const name = `fuzz-${int(rng, 1_000_000)}`;
  switch (route) {
    case 'PUT /api/v1/controls':
      return { name, data: sqlControl() };
    case 'PATCH /api/v1/controls/:id':
      return { name, enabled: rng() < 0.5 };
    case 'PUT /api/v1/controls/:id/data':
    case 'POST /api/v1/controls/validate':
      return { data: sqlControl() };
    case 'POST /api/v1/controls/:id/restore':
      return { revision: 1 };
    case 'POST /api/v1/changes':
      return {
        changes: [
          { op: 'create_control', control: { name, data: sqlControl() } },
          { op: 'upsert_agent', agent: { agent_name: name } },
          { op: 'link', agent_name: name, control_name: name },
        ],
      };
    case 'POST /api/v1/agents/initAgent':
      return { agent_name: name, agent_description: 'fuzzed', steps: [{ type: 'tool', name: 'run_sql' }], metadata: { team: 'a' } };
    case 'PATCH /api/v1/agents/:name':
      return { agent_description: 'patched', metadata: { k: 1 } };
    case 'POST /api/v1/evaluation':
      return { agent_name: 'fuzz-bot', stage: 'pre', step: { type: 'tool', name: 'run_sql', input: { query: 'DROP TABLE x' } } };
    case 'POST /api/v1/observability/events':
      return { events: [event(controlId), { ...event(controlId), matched: false }] };
    case 'POST /api/v1/observability/events/query':
      return { agent_name: 'fuzz-bot', limit: 10 };
    default:
      return randomValue(rng);
  }
}

/** `value` with one part (found by a random walk) replaced by a random value, removed, or joined by an unknown key. */
export function mutated(rng: Rng, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || rng() < 0.25) return randomValue(rng);
  const copy: Record<string, unknown> | unknown[] = Array.isArray(value) ? [...(value as unknown[])] : { ...(value as Record<string, unknown>) };
  const keys = Object.keys(copy);
  if (keys.length === 0) return randomValue(rng);
  const key = pick(rng, keys);
  const slot = copy as Record<string, unknown>;
  const roll = rng();
  if (roll < 0.15 && !Array.isArray(copy)) delete slot[key];
  else if (roll < 0.25 && !Array.isArray(copy)) slot[randomString(rng)] = randomValue(rng);
  else if (roll < 0.6) slot[key] = randomValue(rng);
  else slot[key] = mutated(rng, slot[key]);
  return copy;
}

/**
 * `value` with one of its strings (found at random) replaced by an odd one: the body stays
 * valid in shape, so the odd text goes past validation to whatever stores it.
 */
export function withOddString(rng: Rng, value: unknown): unknown {
  const paths: Array<Array<string | number>> = [];
  const walk = (v: unknown, path: Array<string | number>) => {
    if (typeof v === 'string') paths.push(path);
    else if (Array.isArray(v)) v.forEach((item, i) => walk(item, [...path, i]));
    else if (v !== null && typeof v === 'object') for (const [k, item] of Object.entries(v)) walk(item, [...path, k]);
  };
  walk(value, []);
  if (paths.length === 0) return value;
  const path = pick(rng, paths);
  const odd = pick(rng, ['\u0000', '\ud800', '\udfff', 'a\u0000b', '\ufffe']);
  if (path.length === 0) return odd;
  const copy = JSON.parse(JSON.stringify(value)) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  parent[last] = rng() < 0.5 ? `${String(parent[last])}${odd}` : odd;
  return copy;
}

/** A path parameter: a known one, or something odd, percent-encoded as a client would send it. */
export function paramOf(rng: Rng, param: string, known: { agent: string; controlId: number }): string {
  const roll = rng();
  if (roll < 0.35) return param === 'name' ? known.agent : String(known.controlId);
  if (roll < 0.55) return pick(rng, ['0', '-1', 'abc', '99999999', '1.5', '%00', '%ED%A0%80', 'a%00b', `${known.agent}%00`, '%41'.repeat(128)]);
  if (roll < 0.65) return 'a'.repeat(pick(rng, [100, 101, 128, 129, 500]));
  return encoded(randomString(rng).slice(0, 200));
}

/** Percent-encoded; a lone surrogate (which has no UTF-8) is left out, the raw bytes case covers it. */
function encoded(text: string): string {
  return encodeURIComponent(text.replace(/[\uD800-\uDFFF]/g, ''));
}

/** A query string: the keys routes read, and others, with odd values. */
export function queryOf(rng: Rng): string {
  if (rng() < 0.3) return '';
  const keys = ['agent_name', 'time_range', 'limit', 'cursor', 'name', 'since', 'actor', 'decision', 'x'];
  const parts = Array.from({ length: 1 + int(rng, 3) }, () => {
    const value = rng() < 0.5 ? pick(rng, ['1', '0', '-5', '101', '24h', '7d', 'deny', 'fuzz-bot', '%00', '', 'a'.repeat(300)]) : encoded(randomString(rng).slice(0, 300));
    return `${pick(rng, keys)}=${value}`;
  });
  return `?${parts.join('&')}`;
}
