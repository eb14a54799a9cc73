/**
 * What one check of the json and sql evaluators costs through the engine (one control, one
 * step), on realistic inputs (a 120-character query, 5-field tool arguments) and on large
 * ones, as µs per check and as a ratio to a regex control on the same text measured in the
 * same run. The cases are a table (CASES); bench/evaluators.ts has pii and secrets.
 */
import { compileControls, evaluateStep, type CompiledControlSet } from '../src/engine/index.js';
import { createDefaultRegistry } from '../src/evaluators/index.js';
import { ControlDataSchema, type Step } from '../src/model/index.js';
import type { Benchmark, BenchRow, BenchSection } from './harness.js';

export interface EvaluatorCase {
  /** Row label, for example `sql: 120-character query`. */
  name: string;
  evaluator: string;
  config: Record<string, unknown>;
  /** The selected value for iteration `i`; vary it with `i` to defeat caches (say so in `note`). */
  input: (i: number) => unknown;
  /** The goal in µs per check, when the issue sets one. */
  goalUs?: number;
  note?: string;
}

const SQL_CONFIG = { blocked_operations: ['drop', 'truncate', 'alter'], require_where: ['delete', 'update'], blocked_tables: ['payments'] };
const QUERY = "SELECT o.id, o.total, c.email FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.status = 'open' LIMIT 50";
/** A SELECT of `columns` columns: about 7 characters each. */
const wideQuery = (columns: number) => `SELECT ${Array.from({ length: columns }, (_, i) => `c${i}`).join(', ')} FROM t`;
/** About 12 KB and 60 KB (under the sql evaluator's 64 KB limit), and 100 KB (over it). */
const QUERY_12K = wideQuery(1_800);
const QUERY_60K = wideQuery(8_800);
const QUERY_100K = wideQuery(14_500);
const TOOL_SCHEMA = {
  type: 'object',
  properties: {
    query: { type: 'string', maxLength: 200 },
    limit: { type: 'integer', minimum: 1, maximum: 1000 },
    order: { enum: ['asc', 'desc'] },
    email: { type: 'string', format: 'email' },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 5 },
  },
  required: ['query', 'limit'],
  additionalProperties: false,
};
const toolArgs = (i: number) => ({ query: 'open orders', limit: 1 + (i % 900), order: 'asc', email: 'ops@example.com', tags: ['eu', 'q3'] });
/** About 100 KB of arguments: 2,000 tags of 50 characters. */
const BIG_ARGS = { type: 'object', properties: { tags: { type: 'array', items: { type: 'string', maxLength: 64 } } } };
const bigArgs = () => ({ tags: Array.from({ length: 2000 }, (_, i) => `tag-${String(i).padStart(45, '0')}`) });

export const CASES: EvaluatorCase[] = [
  { name: 'sql: 120-character query, uncached', evaluator: 'sql', config: SQL_CONFIG, input: (i) => `${QUERY} -- ${i}`, goalUs: 60, note: 'a new text each check: every check parses' },
  { name: 'sql: 120-character query, repeated', evaluator: 'sql', config: SQL_CONFIG, input: () => QUERY, note: 'the same text: answered from the parse cache' },
  { name: 'sql: 12 KB query', evaluator: 'sql', config: SQL_CONFIG, input: (i) => `${QUERY_12K} -- ${i}`, note: 'uncached' },
  { name: 'sql: 60 KB query', evaluator: 'sql', config: SQL_CONFIG, input: (i) => `${QUERY_60K} -- ${i}`, note: 'uncached' },
  { name: 'sql: 100 KB query', evaluator: 'sql', config: SQL_CONFIG, input: (i) => `${QUERY_100K} -- ${i}`, note: 'over the 64 KB limit: an evaluator error, not parsed' },
  { name: 'json: 5-field tool arguments', evaluator: 'json', config: { schema: TOOL_SCHEMA }, input: toolArgs, goalUs: 3 },
  { name: 'json: 5-field arguments as a JSON string', evaluator: 'json', config: { schema: TOOL_SCHEMA }, input: (i) => JSON.stringify(toolArgs(i)), note: 'parsed per check' },
  { name: 'json: 100 KB arguments', evaluator: 'json', config: { schema: BIG_ARGS }, input: bigArgs },
];

function setOf(evaluator: string, config: Record<string, unknown>): CompiledControlSet {
  const data = ControlDataSchema.parse({ selector: { path: 'input.value' }, evaluator: { name: evaluator, config }, action: { decision: 'deny' } });
  const set = compileControls([{ control_id: 1, name: 'c', data }], createDefaultRegistry());
  if (set.skipped.length > 0) throw new Error(`${evaluator}: ${set.skipped[0]!.issues[0]!.message}`);
  return set;
}

/** µs per evaluated step, warmed up, over enough steps to take about `ms` milliseconds. */
async function usPerCheck(set: CompiledControlSet, input: (i: number) => unknown, ms: number, warmMs = ms): Promise<number> {
  const steps = (n: number, from: number) => Array.from({ length: n }, (_, k): Step => ({ type: 'tool', name: 't', input: { value: input(from + k) } }));
  // V8 runs WebAssembly (the SQL parser) on a baseline compiler first and optimises hot
  // functions on background threads; on a busy machine that takes seconds, so warm up long.
  const warmUntil = performance.now() + warmMs;
  for (let w = 0; performance.now() < warmUntil; w += 10) {
    for (const step of steps(10, 1_000_000 + w)) {
      const out = evaluateStep(set, step, 'pre');
      if (out instanceof Promise) await out;
    }
  }
  let n = 0;
  let spent = 0;
  let batch = 10;
  while (spent < ms) {
    const prepared = steps(batch, n);
    const t0 = performance.now();
    for (const step of prepared) {
      const out = evaluateStep(set, step, 'pre');
      if (out instanceof Promise) await out;
    }
    spent += performance.now() - t0;
    n += batch;
    batch = Math.min(batch * 2, 5000);
  }
  return (spent * 1000) / n;
}

/** The text a regex control would search for the same value. */
const textOf = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

const benchmarks: Benchmark[] = [
  {
    name: 'evaluators json sql',
    async run(): Promise<BenchRow[]> {
      const rows: BenchRow[] = [];
      const regex = setOf('regex', { pattern: '(?i)\\b(drop|truncate)\\s+table\\b' });
      for (const c of CASES) {
        const us = await usPerCheck(setOf(c.evaluator, c.config), c.input, 1000, 4000);
        const baseUs = await usPerCheck(regex, (i) => textOf(c.input(i)), 1000);
        const ratio = us / baseUs;
        rows.push({
          name: `evaluator ${c.name}`,
          value: us,
          unit: 'µs/check',
          ...(c.goalUs !== undefined ? { goal: `< ${c.goalUs} µs`, pass: us < c.goalUs } : {}),
          note: `${ratio.toFixed(1)}x a regex control on the same text (${baseUs.toFixed(2)} µs)${c.note ? `; ${c.note}` : ''}`,
        });
      }
      rows.push(await loopHold(setOf('sql', SQL_CONFIG)));
      return rows;
    },
  },
];

/**
 * The longest the event loop went without a turn while 60 KB queries were checked one
 * after another (a setImmediate chain notes the gaps): what a long query costs every other
 * request on the server, where the µs/check rows say what it costs itself. The baseline is
 * the longest gap of the same chain on an idle loop for as long, in the same run: on a
 * loaded machine the process itself is descheduled for milliseconds at a time.
 */
async function loopHold(set: CompiledControlSet): Promise<BenchRow> {
  const check = (i: number | string) => evaluateStep(set, { type: 'tool', name: 't', input: { value: `${QUERY_60K} -- ${i}` } }, 'pre');
  // Warm: the threads are started and the code is compiled before the measured checks.
  for (let i = 0; i < 20; i++) await check(`w${i}`);
  const checks = 20;
  const t0 = performance.now();
  const busy = await longestGap(async () => {
    for (let i = 0; i < checks; i++) await check(i);
  });
  const spent = performance.now() - t0;
  const idle = await longestGap(() => new Promise((resolve) => setTimeout(resolve, spent)));
  return {
    name: 'evaluator sql: 60 KB query, longest event-loop hold',
    value: busy,
    unit: 'ms',
    note:
      `${checks} checks one after another, ${(spent / checks).toFixed(1)} ms each; an idle loop's longest gap for as long: ${idle.toFixed(1)} ms; ` +
      'parsed on a thread, the facts read in slices between turns of the loop',
  };
}

/** The longest time between turns of the event loop while `work` runs, in ms. */
async function longestGap(work: () => Promise<unknown>): Promise<number> {
  let longest = 0;
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  await work();
  running = false;
  return longest;
}

export const section: BenchSection = {
  name: 'Evaluators: json and sql',
  chapter: 'Engine and evaluators',
  method: `One check of the \`json\` and \`sql\` evaluators through the engine (one control, one step), on
realistic inputs (a 120-character query, 5-field tool arguments) and on large ones, in µs
per check and as a ratio to a regex control on the same text in the same run (the
baseline). The longest event-loop hold of a 60 KB query is reported too.`,
  benchmarks,
};
