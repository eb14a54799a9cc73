/**
 * What one regex control can cost per step (docs/security.md): the worst patterns the
 * limits allow (MAX_PATTERN_LENGTH, MAX_PROGRAM_SIZE), each on the text that is worst for
 * it, evaluated through the engine on a 400 KB step, against an ordinary control on the
 * same size of text. For each: the time to the answer, and the longest the event loop was
 * held meanwhile (what /health would wait): long texts are searched on a thread
 * (evaluators/regex/search-pool.ts). The review's pattern (2,000 x characters on 400 KB of
 * x…xy), which validation now refuses, is timed with RE2 directly on the loop for
 * comparison: it holds the loop for all of its time.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import RE2 from 're2';
import { compileControls, evaluateStep } from '../src/engine/index.js';
import { createDefaultRegistry } from '../src/evaluators/index.js';
import { MAX_PROGRAM_SIZE } from '../src/evaluators/regex/re2.js';
import { ControlDataSchema, type Step } from '../src/model/index.js';
import { median, type Benchmark, type BenchRow, type BenchSection } from './harness.js';

const TEXT_BYTES = 400 * 1024;

function randomText(alphabet: string): string {
  let out = '';
  for (let i = 0; i < TEXT_BYTES; i++) out += alphabet[Math.floor(Math.random() * alphabet.length)]!;
  return out;
}

/** `unit` repeated to TEXT_BYTES characters. */
function repeated(unit: string): string {
  return unit.repeat(Math.ceil(TEXT_BYTES / unit.length)).slice(0, TEXT_BYTES);
}

const S = MAX_PROGRAM_SIZE;
const letters = randomText('abcdefghijklmnopqrstuvwxyz ');
const xy = randomText('xy');

/** [what, pattern, text]: each allowed pattern on a text that keeps RE2's DFA from caching. */
const worst: Array<[string, string, string]> = [
  [`literal of ${S} x on (x^${S - 1}y)*`, 'x'.repeat(S), repeated(`${'x'.repeat(S - 1)}y`)],
  [`x[xy]{${S - 2}}z on random x/y`, `x[xy]{${S - 2}}z`, xy],
  [`x.{${S - 2}}z on random x/y`, `x.{${S - 2}}z`, xy],
  [`two alternatives [a-z]{${(S >> 1) - 4}} on random letters`, `a[a-z]{${(S >> 1) - 4}}0|b[a-z]{${(S >> 1) - 4}}1`, letters],
];
const ordinary = '(?i)\\b(drop|truncate)\\s+table\\b';

interface Cost {
  /** Median time to the answer. */
  ms: number;
  /** The longest the event loop was held during those evaluations. */
  stallMs: number;
}

async function costOf(pattern: string, text: string): Promise<Cost> {
  const registry = createDefaultRegistry();
  const data = ControlDataSchema.parse({ selector: { path: 'input.text' }, evaluator: { name: 'regex', config: { pattern } }, action: { decision: 'deny' } });
  const set = compileControls([{ control_id: 1, name: 'c', data }], registry);
  if (set.skipped.length > 0) throw new Error(`pattern refused: ${set.skipped[0]!.issues[0]!.message}`);
  const times: number[] = [];
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  for (let i = 0; i < 3; i++) {
    // A fresh step object each time, as a server sees a freshly parsed request.
    const step: Step = { type: 'tool', name: 't', input: { text: text.slice(0) } };
    const t0 = performance.now();
    await evaluateStep(set, step, 'pre');
    times.push(performance.now() - t0);
  }
  loop.disable();
  // The histogram's delays are in nanoseconds, beyond the 1 ms the timer waits anyway.
  return { ms: median(times), stallMs: loop.max / 1e6 };
}

function reviewPatternMs(): number {
  const re = new RE2('x'.repeat(2000), 'u');
  const bytes = Buffer.from(repeated(`${'x'.repeat(1999)}y`));
  const t0 = performance.now();
  re.search(bytes);
  return performance.now() - t0;
}

const benchmarks: Benchmark[] = [
  {
    name: 'regex cost',
    async run(): Promise<BenchRow[]> {
      const base = await costOf(ordinary, letters);
      const rows: BenchRow[] = [
        { name: 'regex: ordinary control on 400 KB', value: base.ms, unit: 'ms', note: `${ordinary}; loop held at most ${base.stallMs.toFixed(1)} ms` },
      ];
      let worstMs = 0;
      let worstStall = 0;
      for (const [what, pattern, text] of worst) {
        const cost = await costOf(pattern, text);
        worstMs = Math.max(worstMs, cost.ms);
        worstStall = Math.max(worstStall, cost.stallMs);
        rows.push({
          name: `regex: worst allowed, ${what}, 400 KB`,
          value: cost.ms,
          unit: 'ms',
          note: `${(cost.ms / base.ms).toFixed(0)}x the ordinary control; loop held at most ${cost.stallMs.toFixed(1)} ms`,
        });
      }
      const review = reviewPatternMs();
      rows.push({ name: 'regex: review pattern (2,000 x, refused now) on 400 KB of x…xy', value: review, unit: 'ms', note: 'RE2 directly, on the loop' });
      rows.push({
        name: 'regex: worst allowed / review pattern, time to answer',
        value: worstMs / review,
        unit: 'x',
        note: `the worst allowed takes about ${((worstMs / 400) * 1024).toFixed(0)} ms per MB of text, on a thread`,
      });
      rows.push({
        name: 'regex: longest event-loop hold, worst allowed / review pattern',
        value: worstStall / review,
        unit: 'x',
        goal: '<= 0.05',
        pass: worstStall / review <= 0.05,
        note: `${worstStall.toFixed(1)} ms against ${review.toFixed(0)} ms`,
      });
      return rows;
    },
  },
];

export const section: BenchSection = {
  name: 'Regex cost',
  chapter: 'Engine and evaluators',
  method: `What one regex control can cost per step: the worst patterns the limits allow
(\`MAX_PATTERN_LENGTH\`, \`MAX_PROGRAM_SIZE\`), each on the text that is worst for it,
evaluated through the engine on a 400 KB step, against an ordinary control on the same size
of text (the baseline). For each: the time to the answer, and the longest the event loop
was held meanwhile (what \`/health\` would wait): long texts are searched on a thread. A
pattern validation refuses (2,000 \`x\` characters on 400 KB of \`x…xy\`) is timed with RE2
directly on the loop, for comparison.`,
  benchmarks,
};
