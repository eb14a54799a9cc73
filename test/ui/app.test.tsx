import { render } from 'ink-testing-library';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dashboard, type DashboardSink } from '../../cli/ui/app.js';
import { initialState } from '../../cli/ui/state.js';
import { makeSummary } from './make-summary.js';

const ARROW_UP = '\u001B[A';
const ARROW_DOWN = '\u001B[B';
const ENTER = '\r';
const ESC = '\u001B';

/** A source the test drives by hand: the same sink the SSE client feeds. */
function manualSource() {
  let sink: DashboardSink | null = null;
  return {
    source: (s: DashboardSink) => {
      sink = s;
      return () => {
        sink = null;
      };
    },
    get sink(): DashboardSink {
      if (!sink) throw new Error('dashboard not subscribed');
      return sink;
    },
  };
}

let unmount: (() => void) | null = null;
afterEach(() => {
  unmount?.();
  unmount = null;
});

function show(width = 120, height = 24, onQuit?: () => void) {
  const live = manualSource();
  const app = render(
    <Dashboard server="http://guard.test:8000" source={live.source} width={width} height={height} throttleMs={5} {...(onQuit ? { onQuit } : {})} />,
  );
  unmount = app.unmount;
  const frame = (): string => app.lastFrame() ?? '';
  const until = (check: (f: string) => boolean | undefined) => vi.waitFor(() => expect(check(frame())).toBe(true), { timeout: 30_000, interval: 10 });
  return { live, app, frame, until };
}

/** Key presses reach useInput only after Ink subscribes; wait a tick between keys. */
const press = async (app: { stdin: { write(s: string): void } }, ...keys: string[]) => {
  for (const key of keys) {
    app.stdin.write(key);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('Dashboard', () => {
  it('shows connection state, totals, rows, and counts per control', async () => {
    const { live, frame, until } = show();
    await until((f) => f.includes('connecting'));
    live.sink.connection({ kind: 'live', since: Date.now() });
    live.sink.evaluation(makeSummary({ agent_name: 'billing', step_name: 'send_email', decision: 'steer' }));
    live.sink.evaluation(makeSummary({ decision: 'deny' }));
    live.sink.evaluation(makeSummary());
    await until((f) => f.includes('total 3'));
    const f = frame();
    expect(f).toContain('guardctl http://guard.test:8000');
    expect(f).toContain('● live');
    expect(f).toMatch(/allow 1\s+deny 1\s+steer 1/);
    expect(f).toContain('TIME');
    expect(f).toContain('DECISION');
    const lines = f.split('\n');
    const table = lines.filter((l) => l.includes('run_sql') || l.includes('send_email'));
    // Newest first: allow, then deny, then steer.
    expect(table.map((l) => /(allow|deny|steer)/.exec(l)?.[1])).toEqual(['allow', 'deny', 'steer']);
    expect(lines.find((l) => l.includes('send_email'))).toContain('billing');
    expect(f).toMatch(/block-sql\s+1/);
    expect(f).toMatch(/steer-pii\s+1/);
  });

  it('never draws more lines than the terminal has, nor lines wider than it', async () => {
    for (const [width, height] of [[120, 24], [60, 20], [30, 10]] as const) {
      const { live, frame, until, app } = show(width, height);
      for (let i = 0; i < 50; i++) live.sink.evaluation(makeSummary({ agent_name: `agent-with-a-long-name-${i}`, decision: i % 3 === 0 ? 'deny' : 'allow' }));
      await until((f) => f.includes('total 50'));
      const lines = frame().split('\n');
      expect(lines.length).toBeLessThan(height);
      for (const line of lines) expect(line.length).toBeLessThanOrEqual(width);
      app.unmount();
    }
  });

  it('moves the selection with arrows and opens details with enter', async () => {
    const { live, app, frame, until } = show();
    live.sink.evaluation(makeSummary({ id: 'old', decision: 'deny', trace_id: 'trace-old' }));
    live.sink.evaluation(makeSummary({ id: 'new', trace_id: 'trace-new' }));
    await until((f) => f.includes('total 2'));
    await press(app, ARROW_DOWN, ENTER);
    await until((f) => f.includes('Evaluation old'));
    const f = frame();
    expect(f).toContain('decision DENY');
    expect(f).toContain('block-sql  [deny]');
    expect(f).toContain('message:  destructive SQL');
    expect(f).toContain('data:     "DROP TABLE users"');
    expect(f).toContain('trace trace-old');
    await press(app, ESC);
    await until((f) => !f.includes('Evaluation old') && f.includes('TIME'));
    await press(app, ARROW_UP, ENTER);
    await until((f) => f.includes('Evaluation new'));
    expect(frame()).toContain('No control matched.');
  });

  it('shows the step\'s session and its labels in details, and follows one session with session:ID', async () => {
    const { live, app, frame, until } = show();
    live.sink.evaluation(makeSummary({ id: 'read', step_name: 'fetch_url', session_id: 'run-7', session_labels: ['untrusted_content'] }));
    live.sink.evaluation(makeSummary({ id: 'other', step_name: 'search', session_id: 'run-8', session_labels: [] }));
    live.sink.evaluation(makeSummary({ id: 'plain', step_name: 'chat' }));
    live.sink.evaluation(makeSummary({ id: 'unkept', step_name: 'lookup', session_id: 'run-9', session_labels: null }));
    await until((f) => f.includes('total 4'));
    await press(app, ARROW_DOWN, ARROW_DOWN, ARROW_DOWN, ENTER);
    await until((f) => f.includes('Evaluation read'));
    expect(frame()).toContain('session run-7   labels untrusted_content');
    await press(app, ESC, ARROW_UP, ENTER);
    await until((f) => f.includes('Evaluation other'));
    expect(frame()).toContain('session run-8   labels none');
    await press(app, ESC, ARROW_UP, ENTER);
    await until((f) => f.includes('Evaluation plain'));
    expect(frame()).toContain('session none');
    await press(app, ESC, ARROW_UP, ENTER);
    await until((f) => f.includes('Evaluation unkept'));
    expect(frame()).toContain('session run-9   labels not kept');
    await press(app, ESC);
    await until((f) => f.includes('TIME'));
    await press(app, '/', ...'session:run-7', ENTER);
    await until((f) => f.includes('filter: session:run-7') && f.includes('fetch_url') && !f.includes('search') && !f.includes('chat'));
  });

  it('marks shadow controls in the table, the control pane and the details', async () => {
    const { live, app, frame, until } = show();
    const shadow = { control_id: 9, control_name: 'pii-shadow', action: 'deny' as const, message: 'card number', steering_context: null, excerpt: null };
    live.sink.evaluation(makeSummary({ shadow_matches: [shadow] }));
    await until((f) => f.includes('total 1'));
    const lines = frame().split('\n');
    // The row is an allow, named after the shadow control with its mark.
    expect(lines.find((l) => l.includes('run_sql'))).toMatch(/allow\s+shadow:pii/);
    expect(frame()).toMatch(/shadow:pii-shadow\s+1/);
    await press(app, ENTER);
    await until((f) => f.includes('Shadow matches (1)'));
    expect(frame()).toContain('shadow:pii-shadow  [would deny]  #9');
    expect(frame()).toContain('No control matched.');
  });

  it('shows the steering context in details', async () => {
    const { live, app, until } = show();
    live.sink.evaluation(makeSummary({ decision: 'steer' }));
    await until((f) => f.includes('total 1'));
    await press(app, ENTER);
    await until((f) => f.includes('steering: redact the email') && f.includes('- redact'));
  });

  it('filters with /, shows a bad regex error and keeps the old filter', async () => {
    const { live, app, frame, until } = show();
    live.sink.evaluation(makeSummary({ agent_name: 'billing', decision: 'steer' }));
    live.sink.evaluation(makeSummary({ agent_name: 'support-bot', decision: 'deny' }));
    await until((f) => f.includes('total 2'));
    await press(app, '/', ...'decision=deny', ENTER);
    await until((f) => f.includes('filter: decision=deny'));
    expect(frame()).not.toContain('billing');
    await press(app, '/');
    await press(app, ...Array.from({ length: 13 }, () => '\u007F'), ...'(bad', ENTER);
    await until((f) => f.includes('not a valid regular expression'));
    expect(frame()).toContain('filter: decision=deny');
    await press(app, ESC);
    await until((f) => !f.includes('not a valid'));
    await press(app, '/', ...Array.from({ length: 13 }, () => '\u007F'), ...'!decision=deny', ENTER);
    await until((f) => f.includes('filter: !decision=deny') && f.includes('billing') && !f.includes('support-bot'));
  });

  it('pauses: the table holds still while totals count, and resuming shows what arrived meanwhile', async () => {
    const { live, app, frame, until } = show();
    live.sink.evaluation(makeSummary({ step_name: 'before_pause' }));
    await until((f) => f.includes('before_pause'));
    await press(app, 'p');
    await until((f) => f.includes('PAUSED 0 new'));
    live.sink.evaluation(makeSummary({ step_name: 'during_pause' }));
    live.sink.evaluation(makeSummary({ step_name: 'during_pause' }));
    await until((f) => f.includes('PAUSED 2 new') && f.includes('total 3'));
    expect(frame()).not.toContain('during_pause');
    await press(app, 'p');
    await until((f) => !f.includes('PAUSED') && f.split('during_pause').length === 3);
    live.sink.evaluation(makeSummary({ step_name: 'after_pause' }));
    await until((f) => f.includes('after_pause'));
  });

  it('clears with c, toggles help with ?, and quits with q', async () => {
    const onQuit = vi.fn();
    const { live, app, until } = show(120, 24, onQuit);
    live.sink.evaluation(makeSummary({ decision: 'deny' }));
    await until((f) => f.includes('total 1'));
    await press(app, 'c');
    await until((f) => f.includes('total 0') && !f.includes('block-sql'));
    await press(app, '?');
    await until((f) => f.includes('Keys (? or esc: back)') && f.includes('pause the table'));
    await press(app, '?');
    await until((f) => f.includes('TIME'));
    await press(app, 'q');
    await vi.waitFor(() => expect(onQuit).toHaveBeenCalledTimes(1));
  });

  it('shows reconnecting and unauthorized states', async () => {
    const { live, until } = show();
    live.sink.connection({ kind: 'reconnecting', attempt: 2, retryAt: Date.now() + 3000, reason: 'ECONNREFUSED' });
    await until((f) => /reconnecting in [23]s \(ECONNREFUSED\)/.test(f));
    live.sink.connection({ kind: 'unauthorized', status: 401, message: 'the server needs a valid API key' });
    await until((f) => f.includes('unauthorized: the server needs a valid API key'));
    live.sink.lagged(12);
    await until((f) => f.includes('server skipped 12'));
  });

  it('starts with a filter given on the command line', async () => {
    const live = manualSource();
    const app = render(<Dashboard server="s" source={live.source} initial={initialState({ filter: 'agent=billing' })} width={100} height={20} throttleMs={5} />);
    unmount = app.unmount;
    live.sink.evaluation(makeSummary({ agent_name: 'billing', step_name: 'kept' }));
    live.sink.evaluation(makeSummary({ agent_name: 'other', step_name: 'hidden' }));
    await vi.waitFor(() => expect(app.lastFrame()).toContain('total 2'));
    expect(app.lastFrame()).toContain('kept');
    expect(app.lastFrame()).not.toContain('hidden');
  });

  it('shows every filter in the header, the server\'s (--agent, --decision) and the / one, within 80 columns', async () => {
    const live = manualSource();
    const app = render(
      <Dashboard server="http://127.0.0.1:8000" serverFilter="agent=data-analyst decision=deny" source={live.source} initial={initialState({ filter: 'control=~sql' })} width={80} height={24} throttleMs={5} />,
    );
    unmount = app.unmount;
    live.sink.evaluation(makeSummary({ agent_name: 'data-analyst', decision: 'deny' }));
    await vi.waitFor(() => expect(app.lastFrame()).toContain('total 1'));
    const lines = (app.lastFrame() ?? '').split('\n');
    expect(lines[2]).toBe('filter: control=~sql  ·  from the server: agent=data-analyst decision=deny');
    expect(lines[3]).toMatch(/^TIME /);
    expect(lines).toHaveLength(23);
    expect(Math.max(...lines.map((l) => l.length))).toBeLessThanOrEqual(80);
  });

  it('fits every help line at 80 columns, wrapping long ones under their key', async () => {
    const live = manualSource();
    const app = render(<Dashboard server="s" source={live.source} width={80} height={24} throttleMs={5} />);
    unmount = app.unmount;
    await press(app, '?');
    await vi.waitFor(() => expect(app.lastFrame()).toContain('Keys (? or esc: back)'));
    const frame = app.lastFrame() ?? '';
    expect(frame).not.toContain('…');
    expect(frame).toContain('empty clears');
    expect(Math.max(...frame.split('\n').map((l) => l.length))).toBeLessThanOrEqual(80);
  });
});
