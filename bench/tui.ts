/**
 * The dashboard under a flood (issue #8): how many events per second the whole path
 * keeps up with (SSE text -> parser -> JSON + schema -> batch -> reducer, and the real
 * Ink screen drawn at its 20 fps cap), and whether memory stays flat after 1,000,000
 * events. Baseline for the ratio: JSON.parse alone of the same event text.
 */
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { SseParser, dispatchMessage } from '../src/client/event-stream.js';
import type { EvaluationSummary } from '../src/model/stream.js';
import type { DashboardSink } from '../cli/ui/app.js';
import { initialState, reduce, visibleRows, type DashboardState } from '../cli/ui/state.js';
import type { Benchmark, BenchRow, BenchSection } from './harness.js';

const GOAL_RATE = 5000;
const FRAME_MS = 50;

function summaryAt(i: number): EvaluationSummary {
  const decision = i % 10 === 0 ? 'deny' : i % 7 === 0 ? 'steer' : 'allow';
  return {
    id: `ev-${i}`,
    timestamp: new Date(1_700_000_000_000 + i).toISOString(),
    trace_id: `trace-${i}`,
    agent_name: `agent-${i % 5}`,
    step_name: ['run_sql', 'send_email', 'search', 'chat'][i % 4]!,
    step_type: 'tool',
    stage: i % 2 ? 'pre' : 'post',
    decision,
    duration_ms: (i % 100) / 37,
    evaluated: 4,
    matches:
      decision === 'allow'
        ? []
        : [
            {
              control_id: i % 20,
              control_name: `control-${i % 20}`,
              action: decision,
              message: 'matched',
              steering_context: decision === 'steer' ? { message: 'redact it' } : null,
              excerpt: 'DROP TABLE users',
            },
          ],
    shadow_matches: [],
    errors: [],
  };
}

function sseText(from: number, count: number): string {
  let text = '';
  for (let i = from; i < from + count; i++) text += `event: evaluation\nid: ev-${i}\ndata: ${JSON.stringify(summaryAt(i))}\n\n: ping\n\n`;
  return text;
}

/** The whole client path, batched per simulated 50 ms frame, as fast as it goes. */
function pipelineRate(text: string, events: number, perFrame: number): { rate: number; state: DashboardState } {
  const parser = new SseParser();
  let state = initialState();
  let pending: EvaluationSummary[] = [];
  let now = 1_700_000_000_000;
  const onEvaluation = (s: EvaluationSummary): void => {
    pending.push(s);
    if (pending.length >= perFrame) {
      now += FRAME_MS;
      state = reduce(state, { type: 'events/received', events: pending, now });
      // The table is recomputed once per frame as the screen would.
      visibleRows(state);
      pending = [];
    }
  };
  const start = performance.now();
  // 16 KiB chunks, as a socket would hand them over.
  for (let at = 0; at < text.length; at += 16_384) {
    for (const message of parser.push(text.slice(at, at + 16_384))) dispatchMessage(message, { onEvaluation });
  }
  state = reduce(state, { type: 'events/received', events: pending, now: now + FRAME_MS });
  const seconds = (performance.now() - start) / 1000;
  if (state.totals.events !== events) throw new Error(`pipeline lost events: ${state.totals.events} of ${events}`);
  return { rate: events / seconds, state };
}

function jsonBaseline(text: string, events: number): number {
  const lines = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
  const start = performance.now();
  for (const line of lines) JSON.parse(line);
  return events / ((performance.now() - start) / 1000);
}

/** A stand-in terminal: Ink draws into it exactly as into a TTY, and we count frames. */
class FakeTerminal extends Writable {
  readonly isTTY = true;
  columns = 120;
  rows = 40;
  /** The tail of everything drawn: a frame may arrive in several writes. */
  tail = '';
  override _write(chunk: Buffer | string, _enc: BufferEncoding, done: () => void): void {
    this.tail = (this.tail + String(chunk)).slice(-65_536);
    done();
  }
}

class FakeInput extends EventEmitter {
  readonly isTTY = true;
  setRawMode(): this {
    return this;
  }
  setEncoding(): void {}
  resume(): void {}
  pause(): void {}
  ref(): void {}
  unref(): void {}
  read(): null {
    return null;
  }
}

/**
 * The real screen at a fixed offered rate for `seconds`: events are pushed on a
 * schedule; falling behind shows as sent < offered, or as the screen's total lagging.
 */
async function liveScreen(rate: number, seconds: number): Promise<{ offered: number; sent: number; shown: number; fps: number; elapsed: number }> {
  // As `guardctl tui` does: React's production build, loaded only now.
  process.env.NODE_ENV ??= 'production';
  const [{ createElement }, { render }, { Dashboard }] = await Promise.all([import('react'), import('ink'), import('../cli/ui/app.js')]);
  const terminal = new FakeTerminal();
  let sink: DashboardSink | null = null;
  let frames = 0;
  const app = render(
    createElement(Dashboard, {
      server: 'bench',
      source: (s: DashboardSink) => {
        sink = s;
        return () => (sink = null);
      },
    }),
    { stdout: terminal as unknown as NodeJS.WriteStream, stdin: new FakeInput() as unknown as NodeJS.ReadStream, maxFps: 20, patchConsole: false, exitOnCtrlC: false, onRender: () => frames++ },
  );
  await new Promise((r) => setTimeout(r, 50));
  const start = performance.now();
  let sent = 0;
  const framesBefore = frames;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = (performance.now() - start) / 1000;
      // Catch up to the schedule: a slow loop shows up as fewer ticks, not fewer events.
      const due = Math.min(Math.floor(elapsed * rate), rate * seconds);
      for (; sent < due; sent++) sink?.evaluation(summaryAt(sent));
      if (elapsed >= seconds) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
  const elapsed = (performance.now() - start) / 1000;
  // One more frame for the last batch to land on screen.
  await new Promise((r) => setTimeout(r, 200));
  const drawn = frames - framesBefore;
  const totals = [...terminal.tail.matchAll(/total (\d+)/g)];
  const shown = Number(totals[totals.length - 1]?.[1] ?? -1);
  app.unmount();
  return { offered: rate * seconds, sent, shown, fps: drawn / elapsed, elapsed };
}

function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function memoryAfter(total: number, perFrame: number): { start: number; mid: number; end: number; rows: number } {
  let state = initialState();
  let now = 1_700_000_000_000;
  let batch: EvaluationSummary[] = [];
  let mid = 0;
  const start = heapAfterGc();
  for (let i = 0; i < total; i++) {
    batch.push(summaryAt(i));
    if (batch.length === perFrame) {
      now += FRAME_MS;
      state = reduce(state, { type: 'events/received', events: batch, now });
      batch = [];
    }
    if (i === total / 10) mid = heapAfterGc();
  }
  const end = heapAfterGc();
  if (state.totals.events !== total - batch.length) throw new Error('memory run lost events');
  return { start, mid, end, rows: state.rows.length };
}

const benchmarks: Benchmark[] = [
  {
    name: 'tui: memory',
    async run(): Promise<BenchRow[]> {
      const total = 1_000_000;
      const m = memoryAfter(total, 250);
      const growth = (m.end - m.mid) / 2 ** 20;
      return [
        {
          name: `tui: heap after ${total.toLocaleString('en')} events`,
          value: Number((m.end / 2 ** 20).toFixed(1)),
          unit: 'MiB',
          goal: 'flat: < 5 MiB growth from 100k to 1M events',
          pass: growth < 5,
          note: `before ${(m.start / 2 ** 20).toFixed(1)} MiB, at 100k ${(m.mid / 2 ** 20).toFixed(1)} MiB, growth ${growth.toFixed(2)} MiB; ${m.rows} rows kept`,
        },
      ];
    },
  },
  {
    name: 'tui: client pipeline',
    async run(): Promise<BenchRow[]> {
      const events = 100_000;
      const text = sseText(0, events);
      pipelineRate(sseText(0, 5000), 5000, 250); // warm-up
      const baseline = jsonBaseline(text, events);
      const { rate } = pipelineRate(text, events, GOAL_RATE * (FRAME_MS / 1000));
      return [
        { name: 'tui: JSON.parse alone (baseline)', value: Math.round(baseline), unit: 'events/s' },
        {
          name: 'tui: SSE parse + schema + reducer, batched per frame',
          value: Math.round(rate),
          unit: 'events/s',
          goal: `>= ${GOAL_RATE} events/s`,
          pass: rate >= GOAL_RATE,
          note: `${(rate / baseline).toFixed(2)}x of JSON.parse alone`,
        },
      ];
    },
  },
  {
    name: 'tui: live screen',
    async run(): Promise<BenchRow[]> {
      const rows: BenchRow[] = [];
      for (const rate of [GOAL_RATE, GOAL_RATE * 4]) {
        const r = await liveScreen(rate, 3);
        const kept = r.sent === r.offered && r.shown === r.sent;
        rows.push({
          name: `tui: Ink screen at ${rate} events/s offered`,
          value: Math.round(r.sent / r.elapsed),
          unit: 'events/s delivered',
          goal: rate === GOAL_RATE ? `all ${r.offered} shown, <= 20 redraws/s` : undefined,
          pass: rate === GOAL_RATE ? kept && r.fps <= 21 : undefined,
          note: `screen total ${r.shown} of ${r.sent} sent; ${r.fps.toFixed(1)} redraws/s`,
        });
      }
      return rows;
    },
  },
];

export const section: BenchSection = {
  name: 'Dashboard',
  chapter: 'CLI, dashboard, SDK and gateway',
  method: `How many events per second the dashboard's whole path keeps up with (SSE text, parser,
JSON and schema check, batch per frame, reducer; and the real Ink screen drawn at its
20 fps cap), and whether memory stays flat after 1,000,000 events. Baseline for the ratio:
\`JSON.parse\` alone of the same event text.`,
  benchmarks,
};
